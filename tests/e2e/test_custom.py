"""End to end for get_api_resources and get_custom_resources: the server over stdio, its kubectl
proxy (whose allow-list opens a custom kind's paths once discovery resolved it), the simulator's
operator clusters (mesh-deny, keda-conflict, gitops-sync, cert-expired).

Each known kind names its planted fault; an unknown kind gets the generic digest; a kind that
holds secrets shows no value; reads stay GETs inside the scope; a cluster-scoped custom kind is
read only by name (a ClusterIssuer) and not at all with --no-cluster-tools; bad kinds are errors
that list the candidates.
"""

import json
import re

import pytest

from tests.e2e.test_services import ok, only_scoped_gets


def test_get_api_resources_lists_the_custom_groups_in_full(shared_serve):
    server, sim = shared_serve("mesh-deny")
    text = ok(server, "get_api_resources", {})
    lines = text.splitlines()
    assert lines[0] == ("API groups served: 12 built-in, 11 custom (from CustomResourceDefinitions or "
                        "aggregated API servers).")
    assert lines[1].startswith("built-in: v1, apps/v1, batch/v1, autoscaling/v2,") and "policy/v1" in lines[1]
    assert "KEDA (event-driven autoscaling)" in lines[2] and "Istio (service mesh)" in lines[2]
    assert "security.istio.io/v1 (Istio (service mesh)):" in lines
    assert "  AuthorizationPolicy plural=authorizationpolicies.security.istio.io namespaced short=ap" in lines
    assert "  ClusterIssuer plural=clusterissuers.cert-manager.io cluster-scoped" in lines
    only_scoped_gets(sim)


def test_the_mesh_policy_that_denies_the_caller_is_named_with_its_pods(shared_serve):
    server, sim = shared_serve("mesh-deny")
    text = ok(server, "get_custom_resources", {"namespace": "prod", "kind": "AuthorizationPolicy"})
    # 35m when the shared simulator loaded its cluster; a test that runs later in the suite reads it older
    assert re.search(r"^authorizationpolicy/deny-checkout-charges age=3[5-9]m generation=1$", text, re.M), text
    assert "  action=DENY selector=app=payments" in text
    assert ("  rule[0] from: principals=[cluster.local/ns/prod/sa/checkout]; to: methods=[POST] "
            "paths=[/v1/charges*]") in text
    assert "  applies to: 2 pod(s): payments-" in text
    for kind, words in (("pa", "  mtls=STRICT selector=every workload in the namespace"),
                        ("virtualservices.networking.istio.io", "subset=v4 timeout=5s retries=2"),
                        ("DestinationRule", "host=payments.prod.svc.cluster.local trafficPolicy: tls=ISTIO_MUTUAL")):
        assert words in ok(server, "get_custom_resources", {"namespace": "prod", "kind": kind})
    only_scoped_gets(sim)
    assert all(r["verb"] == "GET" for r in sim.requests) and sim.journal_entries() == []


def test_the_autoscaler_conflict_and_the_trigger_credentials(shared_serve):
    server, _ = shared_serve("keda-conflict")
    text = ok(server, "get_custom_resources", {"namespace": "prod", "kind": "so"})
    assert ("  conflict: HorizontalPodAutoscaler worker-cpu (not owned by this ScaledObject) also scales "
            "Deployment/worker min=3 max=6: two autoscalers set its replicas in turn") in text
    assert "  target=Deployment/worker min=2 max=30 hpa=keda-hpa-worker Ready=True Active=True Fallback=False" in text
    assert "hostFromEnv=RABBITMQ_URL, mode=QueueLength, queueName=orders, value=20" in text
    assert "authenticationRef=TriggerAuthentication/rabbitmq-auth" in text
    job = ok(server, "get_custom_resources", {"namespace": "prod", "kind": "ScaledJob"})
    assert "job images=registry.example.com/shop/reports:v1.4.0 max=5" in job


def test_the_gitops_application_syncing_to_a_missing_namespace(shared_serve):
    server, sim = shared_serve("gitops-sync", namespaces="prod,argocd,flux-system")
    text = ok(server, "get_custom_resources", {"namespace": "argocd", "kind": "applications.argoproj.io"})
    lines = text.splitlines()
    first = lines.index("application/shop-payments age=90d generation=14")  # the troubled one first
    assert lines[1] == lines[first]
    assert "  destination server=https://kubernetes.default.svc namespace=prod-eu" in lines
    assert any(line.startswith("  sync=OutOfSync revision=9f1c2e7b") and line.endswith("health=Missing")
               for line in lines)
    assert 'reason: namespaces "prod-eu" not found' in text
    flux = ok(server, "get_custom_resources", {"namespace": "flux-system", "kind": "ks", "name": "infra"})
    assert "lastAppliedRevision=main@sha1:3b5d7f9a" in flux and "  suspended=false" in flux
    assert "kustomization/infra age=120d generation=1 observedGeneration=1" in flux
    only_paths = {r["path"].split("?")[0] for r in sim.requests}
    assert "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications" in only_paths


def test_the_expired_certificate_its_issuer_and_events(shared_serve):
    server, _ = shared_serve("cert-expired")
    text = ok(server, "get_custom_resources", {"namespace": "prod", "kind": "Certificate", "name": "shop-tls"})
    assert "  condition Ready=False reason=Expired" in text
    # 3h when the shared simulator loaded its cluster; a test later in the suite reads it older
    assert re.search(r"\(EXPIRED 3h(\d+m)? ago\)", text) and "  renewal was due and has not happened" in text
    assert "  its ClusterIssuer letsencrypt-prod: ready=True reason=ACMEAccountRegistered" in text
    assert "Warning Failed Certificate/shop-tls" in text and "rateLimited" in text
    issuer = ok(server, "get_custom_resources", {"namespace": "prod", "kind": "ClusterIssuer", "name": "letsencrypt-prod"})
    assert "clusterissuer/letsencrypt-prod" in issuer and "type=acme" in issuer


def test_secret_holding_kinds_show_names_only_and_unknown_kinds_the_generic_digest(shared_serve):
    server, _ = shared_serve("cert-expired")
    sealed = ok(server, "get_custom_resources", {"namespace": "prod", "kind": "SealedSecret"})
    assert "  spec.encryptedData: keys API_KEY (values never shown)" in sealed
    assert "AgBy3i4O" not in sealed and "names and references only" in sealed
    chaos = ok(server, "get_custom_resources", {"namespace": "prod", "kind": "NetworkChaos"})
    assert "  action=delay mode=all duration=10m paused=true" in chaos
    assert "  pods it matches in prod: 3 pod(s): frontend-" in chaos
    generic = ok(server, "get_custom_resources", {"namespace": "prod", "kind": "Issuer"})
    assert "type=ca keypair in Secret internal-ca-keypair (named, never read)" in generic
    empty = ok(server, "get_custom_resources", {"namespace": "prod", "kind": "servicemonitors"})
    assert empty == "ServiceMonitor (servicemonitors.monitoring.coreos.com/v1) in namespace prod: no objects."


def test_kinds_that_name_nothing_or_too_much_are_errors_with_the_candidates(shared_serve):
    server, sim = shared_serve("cert-expired")
    text, is_error = server.call("get_custom_resources", {"namespace": "prod", "kind": "Widget"})
    assert is_error and text.startswith("no custom kind matches 'Widget'; the custom kinds this cluster serves:")
    assert "ScaledObject (scaledobjects.keda.sh)" in text
    text, is_error = server.call("get_custom_resources", {"namespace": "prod", "kind": "Deployment"})
    assert is_error and "built-in kind" in text
    text, is_error = server.call("get_custom_resources", {"namespace": "prod", "kind": "ClusterIssuer"})
    assert is_error and "name the one to read" in text
    text, is_error = server.call("get_custom_resources", {"namespace": "prod", "kind": "AppProject",
                                                          "name": "x"})
    assert not is_error and text.endswith("no objects named x.")
    for bad in ({"namespace": "kube-system", "kind": "Certificate"}, {"namespace": "prod", "kind": "-A"},
                {"namespace": "prod", "kind": "certificates/../secrets"}, {"namespace": "prod"},
                {"namespace": "prod", "kind": "Certificate", "name": "Shop_TLS"}):
        text, is_error = server.call("get_custom_resources", bad)
        assert is_error, bad
    only_scoped_gets(sim)


def test_an_ambiguous_kind_lists_both_groups(serve, tmp_path):
    from fixtures.kube_sim.objects.operators import crd
    gateways = [crd("networking.istio.io", "Gateway", "gateways", versions=("v1",), short=("gw",)),
                crd("gateway.networking.k8s.io", "Gateway", "gateways", versions=("v1",), short=("gtw",))]
    cluster = tmp_path / "gateways.json"
    cluster.write_text(json.dumps({"kind": "SimulatedCluster", "base": "healthy", "objects": gateways}))
    server, _ = serve(str(cluster))
    text, is_error = server.call("get_custom_resources", {"namespace": "prod", "kind": "Gateway"})
    assert is_error and text == ("kind 'Gateway' is ambiguous: it names Gateway (gateways.gateway.networking.k8s.io), "
                                 "Gateway (gateways.networking.istio.io); name one as PLURAL.GROUP")
    text = ok(server, "get_custom_resources", {"namespace": "prod", "kind": "gateways.gateway.networking.k8s.io"})
    assert text.startswith("Gateway (gateways.gateway.networking.k8s.io/v1) in namespace prod: no objects")


def test_without_cluster_tools_no_cluster_scoped_custom_kind_is_read(serve):
    server, sim = serve("cert-expired", "--no-cluster-tools")
    names = [t["name"] for t in server.request("tools/list")["result"]["tools"]]
    assert "get_custom_resources" in names and "get_api_resources" not in names
    text, is_error = server.call("get_custom_resources", {"namespace": "prod", "kind": "ClusterIssuer",
                                                          "name": "letsencrypt-prod"})
    assert is_error and "--no-cluster-tools" in text
    cert = ok(server, "get_custom_resources", {"namespace": "prod", "kind": "Certificate"})
    assert "its ClusterIssuer letsencrypt-prod: not read: cluster-scoped reads are switched off" in cert
    assert not [r for r in sim.requests if "clusterissuers" in r["path"]]


@pytest.mark.parametrize("cluster,namespace,kind,words", [
    ("gitops-sync", "flux-system", "HelmRelease", "lastAppliedRevision=6.5.4 lastAttemptedRevision=6.5.4"),
    ("gitops-sync", "flux-system", "hr", "source=HelmRepository/podinfo targetNamespace=staging releaseName=podinfo"),
    ("gitops-sync", "flux-system", "HelmRepository", "artifact=sha256:5d1c7e2f"),
    ("gitops-sync", "flux-system", "gitrepositories.source.toolkit.fluxcd.io", "url=https://git.example.com/platform/fleet.git ref.branch=main"),
    ("cert-expired", "prod", "Schedule", 'schedule="0 3 * * 1" type=PodChaos concurrencyPolicy=Forbid historyLimit=2 paused=true'),
    ("cert-expired", "prod", "podchaos", "action=pod-kill mode=one duration=until deleted paused=false"),
    ("cert-expired", "prod", "ServiceMonitor", "no objects"),
    ("cert-expired", "prod", "TriggerAuthentication", "no objects")])
def test_every_known_kind_reads_through_the_proxy(shared_serve, cluster, namespace, kind, words):
    server, sim = shared_serve(cluster, namespaces="prod,argocd,flux-system")
    text = ok(server, "get_custom_resources", {"namespace": namespace, "kind": kind})
    assert words in text
    assert all(r["verb"] == "GET" for r in sim.requests) and sim.journal_entries() == []
