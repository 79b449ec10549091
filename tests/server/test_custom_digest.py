"""The custom-resource digests on healthy and broken objects of every known kind, the generic and
the names-only digests, kind resolution and the kind argument's check (pure: no cluster)."""

from datetime import datetime, timezone

import pytest

from mcp_kubectl_server.digests.custom import custom_resources_digest, digest_for
from mcp_kubectl_server.digests.custom.apis import api_resources_digest
from mcp_kubectl_server.read.discovery import ApiKind, Discovery, KindError, resolve_kind
from mcp_kubectl_server.tools.custom import check_kind
from mcp_kubectl_server.tools.spec import check_arguments
from mcp_kubectl_server.tools.registry import load

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


def kind(group, version, plural, name, namespaced=True, short=()):
    return ApiKind(group, version, plural, name, namespaced, tuple(short), name.lower())


def obj(api_version, name, spec, status=None, **meta):
    out = {"apiVersion": api_version, "metadata": dict({"name": name, "namespace": "prod",
                                                         "creationTimestamp": "2026-11-28T12:00:00Z"}, **meta),
           "spec": spec}
    if status is not None:
        out["status"] = status
    return out


def cond(type_, status, reason="", message=""):
    return {"type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": "2026-11-29T11:00:00Z"}


def digest(api_kind, objects, **context):
    return custom_resources_digest(api_kind, objects, namespace="prod", context=dict({"now": NOW}, **context))


APP = kind("argoproj.io", "v1alpha1", "applications", "Application")


def test_argo_application_healthy_and_out_of_sync():
    healthy = obj("argoproj.io/v1alpha1", "web", {"project": "p", "source": {"repoURL": "https://git/x", "path": "web"},
                                                 "destination": {"server": "https://kubernetes.default.svc", "namespace": "prod"}},
                  {"sync": {"status": "Synced", "revision": "abc"}, "health": {"status": "Healthy"}})
    broken = obj("argoproj.io/v1alpha1", "api", {"project": "p", "sources": [{"repoURL": "https://git/y", "chart": "api",
                                                                             "targetRevision": "1.2.0"}],
                                                "destination": {"name": "in-cluster"}, "syncPolicy": {"automated": {}}},
                 {"sync": {"status": "OutOfSync"}, "health": {"status": "Degraded", "message": "Deployment api: 0/2 ready"},
                  "operationState": {"phase": "Error", "message": "ComparisonError: rpc error"}})
    lines = digest(APP, [healthy, broken]).splitlines()
    assert lines[0] == ("Application (applications.argoproj.io/v1alpha1) in namespace prod: 2 object(s) "
                        "(a digest written for this kind)")
    assert lines[1].startswith("application/api age=1d")  # the troubled one first
    assert '  sync=OutOfSync health=Degraded health_message="Deployment api: 0/2 ready"' in lines
    assert "  destination server=in-cluster namespace=(the manifests own)" in lines
    assert "  source[0] repo=https://git/y chart=api targetRevision=1.2.0" in lines
    assert "  syncPolicy=automated" in lines
    assert '  last operation phase=Error message="ComparisonError: rpc error"' in lines
    assert "  sync=Synced revision=abc health=Healthy" in lines and "  syncPolicy=manual" in lines


@pytest.mark.parametrize("group,version,plural,name", [
    ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations", "Kustomization"),
    ("helm.toolkit.fluxcd.io", "v2", "helmreleases", "HelmRelease"),
    ("source.toolkit.fluxcd.io", "v1", "gitrepositories", "GitRepository"),
    ("source.toolkit.fluxcd.io", "v1", "helmrepositories", "HelmRepository")])
def test_flux_kinds_ready_revisions_and_suspended(group, version, plural, name):
    api_kind = kind(group, version, plural, name)
    ok = obj(f"{group}/{version}", "a", {"sourceRef": {"kind": "GitRepository", "name": "fleet"}},
             {"observedGeneration": 2, "lastAppliedRevision": "main@sha1:1", "lastAttemptedRevision": "main@sha1:1",
              "conditions": [cond("Ready", "True", "ReconciliationSucceeded", "Applied revision: main@sha1:1")]},
             generation=2)
    failing = obj(f"{group}/{version}", "b", {"suspend": True, "url": "https://charts.example.com"},
                  {"observedGeneration": 3, "lastAppliedRevision": "main@sha1:1", "lastAttemptedRevision": "main@sha1:2",
                   "history": [{"chartVersion": "6.5.1"}],
                   "conditions": [cond("Ready", "False", "BuildFailed", "kustomize build failed: missing resource")]},
                  generation=4)
    text = digest(api_kind, [ok, failing])
    assert f"{name.lower()}/b age=1d generation=4 observedGeneration=3 (not yet reconciled)" in text
    assert ('  condition Ready=False reason=BuildFailed message="kustomize build failed: missing resource"'
            in text)
    assert "  lastAppliedRevision=main@sha1:1 lastAttemptedRevision=main@sha1:2 (the last attempt did not apply)" in text
    assert "  suspended=true" in text and "  suspended=false" in text
    assert "  source=GitRepository/fleet" in text and "  url=https://charts.example.com" in text
    assert digest_for(group, name) is not None


def test_helmrelease_v2_takes_the_last_applied_from_its_history():
    hr = obj("helm.toolkit.fluxcd.io/v2", "podinfo", {"chart": {"spec": {"sourceRef": {"kind": "HelmRepository",
                                                                                      "name": "podinfo"}}}},
             {"history": [{"chartVersion": "6.5.4", "chartName": "podinfo"}], "lastAttemptedRevision": "6.5.4",
              "conditions": [cond("Ready", "True", "UpgradeSucceeded", "Helm upgrade succeeded")]})
    text = digest(kind("helm.toolkit.fluxcd.io", "v2", "helmreleases", "HelmRelease"), [hr])
    assert "  lastAppliedRevision=6.5.4 lastAttemptedRevision=6.5.4" in text
    assert "  source=HelmRepository/podinfo" in text


SO = kind("keda.sh", "v1alpha1", "scaledobjects", "ScaledObject")


def hpa(name, target, *, min_=1, max_=5):
    return {"metadata": {"name": name}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": target},
                                                "minReplicas": min_, "maxReplicas": max_}}


def test_keda_scaled_object_names_a_competing_hpa_and_masks_credentials():
    so = obj("keda.sh/v1alpha1", "worker", {"scaleTargetRef": {"name": "worker"}, "minReplicaCount": 1, "maxReplicaCount": 9,
                                           "triggers": [{"type": "azure-servicebus", "metadata": {
                                               "queueName": "q", "connection": "Endpoint=sb://x;SharedAccessKey=abc123",
                                               "connectionFromEnv": "SB_CONN"}}]},
             {"hpaName": "keda-hpa-worker", "conditions": [cond("Ready", "False", "ScaledObjectCheckFailed",
                                                                "Target resource doesn't exist"),
                                                           cond("Active", "False"), cond("Fallback", "True")]})
    text = digest(SO, [so], hpas=[hpa("keda-hpa-worker", "worker"), hpa("worker-cpu", "worker", min_=3, max_=6),
                                  hpa("other", "api")])
    assert "  target=Deployment/worker min=1 max=9 hpa=keda-hpa-worker Ready=False Active=False Fallback=True" in text
    assert "connection=<redacted>" in text and "abc123" not in text and "connectionFromEnv=SB_CONN" in text
    assert text.count("conflict:") == 1 and "HorizontalPodAutoscaler worker-cpu" in text
    quiet = digest(SO, [so], hpas=[hpa("keda-hpa-worker", "worker")])
    assert "conflict" not in quiet
    assert "other autoscalers not readable: forbidden" in digest(SO, [so], hpas="forbidden")


PODS = [{"metadata": {"name": "payments-1", "labels": {"app": "payments"}}},
        {"metadata": {"name": "web-1", "labels": {"app": "web"}}}]


def test_istio_policies_in_words_with_the_pods_they_select():
    ap = kind("security.istio.io", "v1", "authorizationpolicies", "AuthorizationPolicy")
    deny = obj("security.istio.io/v1", "deny", {"action": "DENY", "selector": {"matchLabels": {"app": "payments"}},
                                               "rules": [{"from": [{"source": {"notNamespaces": ["prod"]}}],
                                                          "when": [{"key": "request.headers[x-env]", "values": ["test"]}]}]})
    allow_nothing = obj("security.istio.io/v1", "allow-nothing", {})
    text = digest(ap, [deny, allow_nothing], pods=PODS)
    assert "  action=DENY selector=app=payments" in text and "  applies to: 1 pod(s): payments-1" in text
    assert "  rule[0] from: notNamespaces=[prod]; to: any operation; when: request.headers[x-env] in [test]" in text
    assert "  action=ALLOW selector=every workload in the namespace" in text
    assert "  no rules: allows nothing, so every request to these workloads is denied" in text
    assert "  applies to: 2 pod(s): payments-1, web-1" in text
    pa = obj("security.istio.io/v1", "strict", {"selector": {"matchLabels": {"app": "web"}}, "mtls": {"mode": "STRICT"},
                                               "portLevelMtls": {"8080": {"mode": "DISABLE"}}})
    text = digest(kind("security.istio.io", "v1", "peerauthentications", "PeerAuthentication"), [pa], pods=PODS)
    assert "  mtls=STRICT selector=app=web" in text and "  port 8080: mtls=DISABLE" in text
    vs = obj("networking.istio.io/v1", "web", {"hosts": ["web"], "http": [{"match": [{"uri": {"prefix": "/api"}}],
                                                                          "route": [{"destination": {"host": "web", "subset": "v1"}, "weight": 90},
                                                                                    {"destination": {"host": "web", "subset": "v2"}, "weight": 10}],
                                                                          "fault": {"abort": {"httpStatus": 503}}}]})
    text = digest(kind("networking.istio.io", "v1", "virtualservices", "VirtualService"), [vs])
    assert "  http[0] match: uri prefix /api -> web subset=v1 weight=90, web subset=v2 weight=10 fault=abort" in text
    dr = obj("networking.istio.io/v1", "web", {"host": "web", "subsets": [{"name": "v3", "labels": {"version": "v3"}}]})
    text = digest(kind("networking.istio.io", "v1", "destinationrules", "DestinationRule"), [dr], pods=PODS)
    assert "  subset v3 labels=version=v3" in text and "(it selects no pod now)" in text


CERT = kind("cert-manager.io", "v1", "certificates", "Certificate")


def test_certificates_valid_and_expired_with_their_issuer():
    valid = obj("cert-manager.io/v1", "ok", {"secretName": "ok-tls", "issuerRef": {"name": "ca"}},
                {"notAfter": "2027-01-29T12:00:00Z", "renewalTime": "2026-12-30T12:00:00Z",
                 "conditions": [cond("Ready", "True", "Ready", "Certificate is up to date and has not expired")]})
    expired = obj("cert-manager.io/v1", "old", {"secretName": "old-tls", "issuerRef": {"name": "le", "kind": "ClusterIssuer"}},
                  {"notAfter": "2026-11-29T09:00:00Z", "renewalTime": "2026-11-14T09:00:00Z",
                   "conditions": [cond("Ready", "False", "Expired", "Certificate expired")]})
    never = obj("cert-manager.io/v1", "new", {"secretName": "new-tls", "issuerRef": {"name": "gone"}}, {})
    issuers = {("Issuer", "ca"): {"status": {"conditions": [cond("Ready", "True", "KeyPairVerified")]}},
               ("ClusterIssuer", "le"): {"status": {"conditions": [cond("Ready", "False", "ErrRegisterACMEAccount",
                                                                        "connection refused")]}},
               ("Issuer", "gone"): "issuers.cert-manager.io \"gone\" not found (404)"}
    text = digest(CERT, [valid, expired, never], issuers=issuers)
    assert "  notAfter=2026-11-29T09:00:00Z (EXPIRED 3h ago) renewalTime=2026-11-14T09:00:00Z" in text
    assert "  renewal was due and has not happened" in text
    assert "  notAfter=2027-01-29T12:00:00Z (in 61d)" in text
    assert "  notAfter=none (never issued)" in text
    assert "  its ClusterIssuer le: ready=False reason=ErrRegisterACMEAccount message=\"connection refused\"" in text
    assert "  its Issuer ca: ready=True reason=KeyPairVerified" in text
    assert "  its Issuer gone: issuers.cert-manager.io" in text
    assert "writes Secret old-tls (named, never read)" in text
    issuer = obj("cert-manager.io/v1", "le", {"acme": {"server": "https://acme.example/dir", "solvers": [{"dns01": {}}]}},
                 {"conditions": [cond("Ready", "True")]})
    text = digest(kind("cert-manager.io", "v1", "issuers", "Issuer"), [issuer])
    assert "  type=acme server=https://acme.example/dir solvers=dns01" in text


def test_chaos_experiments_and_schedules_name_their_pods():
    chaos = obj("chaos-mesh.org/v1alpha1", "lag", {"action": "delay", "mode": "one", "duration": "30s",
                                                   "selector": {"namespaces": ["prod", "staging"],
                                                                "labelSelectors": {"app": "payments"}},
                                                   "delay": {"latency": "2s"}})
    text = digest(kind("chaos-mesh.org", "v1alpha1", "networkchaos", "NetworkChaos"), [chaos], pods=PODS,
                  allowed=("prod",))
    assert "  action=delay mode=one duration=30s paused=false" in text and "  delay: latency=2s" in text
    assert "  pods it matches in prod: 1 pod(s): payments-1" in text
    assert "  also selects pods in staging (outside this server's scope: not read)" in text
    schedule = obj("chaos-mesh.org/v1alpha1", "nightly", {"schedule": "5 * * * *", "type": "PodChaos",
                                                         "podChaos": {"action": "pod-kill", "mode": "all",
                                                                      "selector": {"labelSelectors": {"app": "web"}}}},
                   annotations={"experiment.chaos-mesh.org/pause": "true"})
    text = digest(kind("chaos-mesh.org", "v1alpha1", "schedules", "Schedule"), [schedule], pods=PODS)
    assert '  schedule="5 * * * *" type=PodChaos concurrencyPolicy=Forbid historyLimit=1 paused=true' in text
    assert "  action=pod-kill mode=all duration=until deleted paused=true" in text
    assert "  pods it matches in prod: 1 pod(s): web-1" in text


def test_an_unknown_kind_gets_its_spec_flattened_and_bounded():
    widget = obj("example.com/v1", "w", {"size": 3, "password": "hunter2", "db": {"secretName": "db-creds"},
                                        "items": list(range(30)), "deep": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}},
                 {"phase": "Broken", "conditions": [cond("Ready", "False", "Oops", "it broke")]})
    text = digest(kind("example.com", "v1", "widgets", "Widget"), [widget])
    assert "(the generic digest)" in text and '  condition Ready=False reason=Oops message="it broke"' in text
    assert "  spec.size=3" in text and "  spec.password=<redacted>" in text and "hunter2" not in text
    assert "  spec.db.secretName=db-creds" in text and "  spec.items: 20 more items not shown" in text
    assert "  spec.deep.a.b.c.d.e=<dict nested deeper than 6>" in text and "  status.phase=Broken" in text
    many = digest(kind("example.com", "v1", "widgets", "Widget"), [dict(widget, spec={f"k{i}": i for i in range(99)})])
    assert "... 59 more lines not shown" in many


def test_secret_holding_kinds_show_names_and_references_never_values():
    external = obj("external-secrets.io/v1", "db", {
        "secretStoreRef": {"name": "vault", "kind": "ClusterSecretStore"}, "target": {"name": "db-creds"},
        "data": [{"secretKey": "password", "remoteRef": {"key": "prod/db", "property": "password"}}],
        "template": {"data": {"DSN": "postgres://u:s3cr3t@db/prod"}}})
    text = digest(kind("external-secrets.io", "v1", "externalsecrets", "ExternalSecret"), [external])
    assert "names and references only: this kind holds secrets" in text
    assert "  spec.secretStoreRef.name=vault" in text and "  spec.target.name=db-creds" in text
    assert "  spec.data[0].remoteRef.key=prod/db" in text and "  spec.template.data: keys DSN (values never shown)" in text
    assert "s3cr3t" not in text
    sealed = obj("bitnami.com/v1alpha1", "s", {"encryptedData": {"TOKEN": "AgA" + "Q" * 60}})
    text = digest(kind("bitnami.com", "v1alpha1", "sealedsecrets", "SealedSecret"), [sealed])
    assert "keys TOKEN (values never shown)" in text and "AgAQQQ" not in text
    vault = obj("example.com/v1", "v", {"token": "s.abcdef", "role": "web"})
    assert "s.abcdef" not in digest(kind("example.com", "v1", "vaultauths", "VaultAuth"), [vault])


DISCOVERY = Discovery([("", "v1"), ("apps", "v1")], [
    kind("networking.istio.io", "v1", "gateways", "Gateway", short=("gw",)),
    kind("gateway.networking.k8s.io", "v1", "gateways", "Gateway"),
    kind("keda.sh", "v1alpha1", "scaledobjects", "ScaledObject", short=("so",)),
    kind("cert-manager.io", "v1", "clusterissuers", "ClusterIssuer", namespaced=False)], [("metrics.x.io/v1", "503")])


@pytest.mark.parametrize("text", ["ScaledObject", "scaledobject", "scaledobjects", "so", "scaledobjects.keda.sh",
                                  "ScaledObject.keda.sh"])
def test_a_kind_resolves_by_kind_plural_singular_short_name_and_group(text):
    assert resolve_kind(DISCOVERY, text).plural == "scaledobjects"


@pytest.mark.parametrize("text,words", [("Gateway", "ambiguous"), ("gateways", "ambiguous"),
                                        ("Widget", "no custom kind matches"), ("pods", "built-in kind"),
                                        ("deployments.apps", "built-in kind"), ("so.istio.io", "no custom kind")])
def test_ambiguous_unknown_and_builtin_kinds_are_errors(text, words):
    with pytest.raises(KindError, match=words):
        resolve_kind(DISCOVERY, text)
    assert resolve_kind(DISCOVERY, "gw").group == "networking.istio.io"


def test_api_resources_digest_summarises_builtin_and_lists_custom_and_failures():
    text = api_resources_digest(DISCOVERY)
    assert text.splitlines()[1] == "built-in: v1, apps/v1"
    assert "  ScaledObject plural=scaledobjects.keda.sh namespaced short=so" in text
    assert "metrics.x.io/v1: not discoverable now (503)" in text
    assert "Gateway API" in text.splitlines()[2] and "Istio (service mesh)" in text.splitlines()[2]


@pytest.mark.parametrize("value", ["-A", "--all-namespaces", "certificates/../secrets", "pods,secrets", "a b",
                                   "", "x" * 254, 7, None, "Certificate.", ".io", "cert-manager.io/v1"])
def test_the_kind_argument_rejects_anything_but_a_kind(value):
    tool = load().tools["get_custom_resources"]
    assert check_kind("kind", value)
    assert check_arguments(tool, {"namespace": "prod", "kind": value})


def test_the_tools_are_declared_once_with_their_scope():
    tools = load().tools
    assert tools["get_api_resources"].namespaced is False and tools["get_api_resources"].properties == {}
    assert tools["get_custom_resources"].required == ("namespace", "kind")
    assert "get_api_resources" not in load(cluster_tools=False).tools


class RecordingReader:
    """A fake reader answering discovery from a table, recording each path it was asked."""

    def __init__(self, answers):
        self.answers, self.paths, self.cache = answers, [], {}

    def get_json(self, path, query=None):
        self.paths.append(path)
        answer = self.answers[path]
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_discovery_reads_custom_groups_only_keeps_its_answer_a_minute_and_names_a_dead_group():
    from mcp_kubectl_server.read.discovery import read_discovery
    from mcp_kubectl_server.read.errors import ReadError
    group = lambda name, version: {"name": name, "preferredVersion": {"groupVersion": f"{name}/{version}",
                                                                     "version": version}}
    reader = RecordingReader({
        "/apis": {"groups": [group("apps", "v1"), group("keda.sh", "v1alpha1"), group("external.metrics.k8s.io", "v1beta1"),
                             group("bad group", "v1"), group("x.io", "../v1")]},
        "/apis/keda.sh/v1alpha1": {"resources": [{"name": "scaledobjects", "kind": "ScaledObject", "namespaced": True,
                                                  "shortNames": ["so"]},
                                                 {"name": "scaledobjects/status", "kind": "ScaledObject"}]},
        "/apis/external.metrics.k8s.io/v1beta1": ReadError("the server is currently unable to handle the request (503)",
                                                           status=503)})
    clock = [100.0]
    found = read_discovery(reader, now=lambda: clock[0])
    assert [k.plural for k in found.custom] == ["scaledobjects"] and ("apps", "v1") in found.builtin
    assert found.failed == [("external.metrics.k8s.io/v1beta1", "the server is currently unable to handle the request (503)")]
    assert reader.paths == ["/apis", "/apis/keda.sh/v1alpha1", "/apis/external.metrics.k8s.io/v1beta1"]
    clock[0] += 59
    assert read_discovery(reader, now=lambda: clock[0]) is found and len(reader.paths) == 3
    clock[0] += 2
    read_discovery(reader, now=lambda: clock[0])
    assert len(reader.paths) == 6  # a minute on, a CRD installed meanwhile is seen
