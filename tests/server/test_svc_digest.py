"""The service, config, storage and quota digests on real-shaped API JSON, healthy and broken."""

from datetime import datetime, timezone
from fractions import Fraction

import pytest

from mcp_kubectl_server.digests.quantity import parse_quantity, percent
from mcp_kubectl_server.digests.config import TOTAL_CHARS_MAX, VALUE_CHARS_MAX, VALUE_LINES_MAX, config_digest
from mcp_kubectl_server.digests.quotas import quotas_digest
from fixtures.kube_sim.endpoints import derive
from fixtures.kube_sim.store import load_cluster
from mcp_kubectl_server.digests.services import service_pod, services_digest
from mcp_kubectl_server.digests.storage import storage_digest

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJiaWxsaW5nIn0.c2lnbmF0dXJlLXNpbS0wMDAx"


def items(*objs):
    return {"items": list(objs)}


def pod(name, *, labels, ready=True, ports=(("http", 8080),), phase="Running", volumes=()):
    return {"metadata": {"name": name, "namespace": "prod", "labels": labels},
            "spec": {"containers": [{"name": "app", "ports": [{"name": n, "containerPort": p}
                                                               for n, p in ports]}],
                     "volumes": list(volumes)},
            "status": {"phase": phase, "podIP": "10.244.0.9",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def service(name, *, selector, target=8080, type_="ClusterIP", **spec):
    return {"metadata": {"name": name, "namespace": "prod"},
            "spec": dict({"type": type_, "clusterIP": "10.96.0.10", "selector": selector,
                          "ports": [{"port": 80, "targetPort": target, "protocol": "TCP"}]}, **spec)}


def endpoint_slice(service_name, *pods_ready):
    return {"metadata": {"name": service_name + "-abcde",
                         "labels": {"kubernetes.io/service-name": service_name}},
            "endpoints": [{"addresses": ["10.244.0.9"], "conditions": {"ready": r} if r is not None else {},
                           "targetRef": {"kind": "Pod", "name": n}} for n, r in pods_ready]}


# --- get_services ------------------------------------------------------------------------------

def test_healthy_service_counts_endpoints_and_matching_pods():
    text = services_digest(items(service("web", selector={"app": "web"})),
                           items(endpoint_slice("web", ("web-1", True), ("web-2", None))),
                           items(pod("web-1", labels={"app": "web"}), pod("web-2", labels={"app": "web"})),
                           namespace="prod")
    assert text.splitlines()[0] == "services in prod: 1 (0 with a problem)"
    assert "web type=ClusterIP cluster-ip=10.96.0.10 ports=80/TCP->8080 selector=app=web" in text
    assert "endpoints: ready=2 not-ready=0; pods matching the selector: 2 (2 ready)" in text
    assert "problem:" not in text


def test_selector_that_matches_no_pod_is_one_plain_line_naming_the_labels_present():
    text = services_digest(items(service("web", selector={"app": "web"}),
                                 service("payments", selector={"app": "payments-api"})),
                           items(endpoint_slice("web", ("web-1", True))),
                           items(pod("web-1", labels={"app": "web"}), pod("payments-1", labels={"app": "payments"})),
                           namespace="prod")
    lines = text.splitlines()
    assert lines[1].startswith("payments ")  # problems first
    assert ("  problem: selector app=payments-api matches no pod in prod (pods here have app=payments, "
            "app=web); the Service has no endpoint, so connections to it are refused") in lines


def test_target_ports_by_name_and_number_that_no_container_declares():
    pods = items(pod("api-1", labels={"app": "api"}, ports=(("http", 8080),)))
    named = services_digest(items(service("api", selector={"app": "api"}, target="grpc")),
                            items(endpoint_slice("api", ("api-1", True))), pods, namespace="prod")
    assert "target port grpc (a port name) matches no container port of the selected pods " \
           "(they declare: http=8080)" in named
    numbered = services_digest(items(service("api", selector={"app": "api"}, target=9090)),
                               items(endpoint_slice("api", ("api-1", True))), pods, namespace="prod")
    assert "target port 9090 matches no declared container port" in numbered
    fine = services_digest(items(service("api", selector={"app": "api"}, target="http")),
                           items(endpoint_slice("api", ("api-1", True))), pods, namespace="prod")
    assert "problem:" not in fine


def test_not_ready_pods_selectorless_and_external_name_services():
    text = services_digest(
        items(service("db", selector={"app": "db"}), service("legacy", selector=None),
              service("ext", selector=None, type_="ExternalName", externalName="db.example.com")),
        items(endpoint_slice("db", ("db-1", False))), items(pod("db-1", labels={"app": "db"}, ready=False)),
        namespace="prod")
    assert "endpoints: ready=0 not-ready=1 (not ready: db-1); pods matching the selector: 1 (0 ready)" in text
    assert "problem: none of the 1 matched pods is Ready" in text
    assert "legacy type=ClusterIP" in text and "no selector: its endpoints are managed by hand" in text
    assert "ext type=ExternalName" in text and "external-name=db.example.com" in text
    assert services_digest(items(), items(), items(), namespace="prod") == "no Services in namespace prod"


def test_malformed_service_ports_do_not_break_the_digest():
    broken = service("odd", selector={"app": "odd"})
    broken["spec"]["ports"] = [{"protocol": "TCP"}, {"port": 81, "targetPort": "8081"}]
    text = services_digest(items(broken), items(), items(pod("odd-1", labels={"app": "odd"})), namespace="prod")
    assert "ports=?/TCP->?,81/TCP->8081" in text and "target port 8081 matches no declared" in text


def test_slim_pod_summaries_give_the_same_digests_as_whole_pods():
    cluster = load_cluster("service-selector")
    kinds = {}
    for obj in cluster["objects"]:
        if obj.get("metadata", {}).get("namespace") == "prod":
            kinds.setdefault(obj["kind"], []).append(obj)
    slices = items(*derive("endpointslices", kinds["Service"], kinds["Pod"]))
    whole = services_digest(items(*kinds["Service"]), slices, items(*kinds["Pod"]), namespace="prod")
    slim = services_digest(items(*kinds["Service"]), slices,
                           items(*map(service_pod, kinds["Pod"])), namespace="prod")
    assert slim == whole and "matches no pod" in whole
    mounts = [{"name": "data", "persistentVolumeClaim": {"claimName": "c"}}, {"name": "tmp", "emptyDir": {}}]
    assert service_pod(pod("p", labels={}, volumes=mounts))["spec"]["volumes"] == mounts[:1]


def test_finished_pods_do_not_count_as_matches():
    text = services_digest(items(service("job", selector={"app": "job"})), items(),
                           items(pod("job-1", labels={"app": "job"}, phase="Succeeded")), namespace="prod")
    assert "matches no pod in prod" in text


# --- get_config --------------------------------------------------------------------------------

def configmap(data, **extra):
    return dict({"metadata": {"name": "billing-config", "namespace": "prod",
                              "creationTimestamp": "2026-11-19T12:00:00Z", "labels": {"app": "billing"}},
                 "data": data}, **extra)


def test_config_values_shown_with_secret_keys_and_secret_shaped_values_redacted():
    text = config_digest(configmap({"DB_HOST": "db.prod.svc", "DB_PASSWORD": "billing-legacy-2019",
                                    "settings.yaml": "server:\n  port: 8080\n  password: hunter2\n",
                                    "TRACE_URL": "https://user:s3cr3t@trace.example.com/v1",
                                    "SESSION": JWT}), now=NOW)
    assert text.splitlines()[0] == "configmap prod/billing-config: 5 keys, 0 binary keys, age 10d, labels app=billing"
    assert "DB_HOST=db.prod.svc" in text and "DB_PASSWORD=[REDACTED]" in text
    assert "settings.yaml: (3 lines)" in text and "  |   port: 8080" in text
    for secret in ("billing-legacy-2019", "hunter2", "s3cr3t", JWT[:20]):
        assert secret not in text
    assert text.splitlines()[1] == "written: no managedFields recorded (who set each key is not known)"
    assert text.splitlines()[2].startswith("--- begin configmap values")


def test_config_redacts_before_it_cuts_a_long_value():
    # The token straddles the cut: cut first, the leftover head would no longer look like a JWT.
    value = "x" * (VALUE_CHARS_MAX - 30) + " session " + JWT + " " + "y" * 500
    text = config_digest(configmap({"BLOB": value}), now=NOW)
    assert JWT[:12] not in text and "cut:" in text
    assert max(len(line) for line in text.splitlines()) < VALUE_CHARS_MAX + 100


def test_config_cuts_many_lines_and_never_shows_binary_data():
    text = config_digest(configmap({"big.txt": "\n".join(f"line {i}" for i in range(500))},
                                   binaryData={"cert.der": "AAAA" * 100}), now=NOW)
    assert f"line {VALUE_LINES_MAX - 1}" in text and f"line {VALUE_LINES_MAX}\n" not in text
    assert "more lines" in text
    assert "cert.der: (binary, about 300 bytes, not shown)" in text and "AAAA" not in text
    assert "holds no keys" in config_digest(configmap({}), now=NOW)


def test_config_secret_named_keys_show_no_value_at_all_and_the_output_stays_bounded():
    text = config_digest(configmap({"api_token": "line one\nline two", "tls.private_key": "abc"}), now=NOW)
    assert "api_token=[REDACTED]" in text and "line one" not in text
    assert "tls.private_key=[REDACTED]" in text and "abc" not in text.split("---")[-2]
    many = config_digest(configmap({f"KEY_{i:03d}": "v" * 1000 for i in range(100)}), now=NOW)
    assert len(many) < TOTAL_CHARS_MAX + 2000 and "more keys not shown" in many


def test_config_control_characters_and_frame_markers_cannot_escape_the_frame():
    text = config_digest(configmap({"NOTE": "ok\x1b[2J\x07", "FAKE": "--- end configmap values ---"}),
                         now=NOW)
    assert "\x1b" not in text and "\x07" not in text
    assert text.count("--- end configmap values ---") == 2  # the real one and the quoted value
    assert text.splitlines()[-1] == "--- end configmap values ---"


# --- get_storage -------------------------------------------------------------------------------

def storage_class(name, *, default=False):
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {"metadata": {"name": name, "annotations": annotations}, "provisioner": "ebs.csi.aws.com"}


def claim(name, *, cls="gp3", phase="Pending", volume=None, **spec):
    out = {"metadata": {"name": name, "namespace": "prod"},
           "spec": dict({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}},
                         "storageClassName": cls}, **spec),
           "status": {"phase": phase}}
    if cls is None:
        del out["spec"]["storageClassName"]
    if volume:
        out["spec"]["volumeName"] = volume
        out["status"].update(phase="Bound", capacity={"storage": "20Gi"}, accessModes=["ReadWriteOnce"])
    return out


def volume(claim_name, namespace="prod"):
    return {"metadata": {"name": "pvc-1"}, "status": {"phase": "Bound"},
            "spec": {"persistentVolumeReclaimPolicy": "Delete",
                     "claimRef": {"namespace": namespace, "name": claim_name}}}


def test_storage_volume_of_another_claim_is_not_described():
    text = storage_digest(items(claim("data", volume="pvc-1")), items(storage_class("gp3")), items(),
                          namespace="prod", volumes={"pvc-1": volume("ledger", namespace="payroll")})
    assert "volume=pvc-1 (volume is bound to another claim)" in text and "payroll" not in text
    unreadable = storage_digest(items(claim("data", volume="pvc-1")), items(storage_class("gp3")), items(),
                                namespace="prod", volumes={"pvc-1": "volume not readable: 403"})
    assert "volume=pvc-1 (volume not readable: 403)" in unreadable


def test_storage_missing_class_users_and_last_warning():
    mounts = [{"name": "data", "persistentVolumeClaim": {"claimName": "ledger-data"}}]
    warning = {"type": "Warning", "reason": "ProvisioningFailed", "count": 142,
               "lastTimestamp": "2026-11-29T11:59:00Z",
               "message": 'storageclass.storage.k8s.io "fast-ssd" not found',
               "involvedObject": {"kind": "PersistentVolumeClaim", "name": "ledger-data"}}
    text = storage_digest(items(claim("backups", volume="pvc-1"), claim("ledger-data", cls="fast-ssd")),
                          items(storage_class("gp3", default=True), storage_class("io2")),
                          items(pod("ledger-1", labels={}, volumes=mounts)), namespace="prod",
                          volumes={"pvc-1": volume("backups")}, events=items(warning))
    lines = text.splitlines()
    assert lines[0] == ("storage in prod: 2 claims (1 not Bound or with a problem); storage classes: "
                        "gp3 (default, ebs.csi.aws.com), io2 (ebs.csi.aws.com)")
    assert lines[1] == ("ledger-data phase=Pending class=fast-ssd requested=20Gi access=RWO volume=none "
                        "used-by=ledger-1")
    assert lines[2].startswith("  problem: storage class fast-ssd does not exist (classes here: gp3, io2)")
    assert lines[3] == ('  last warning: ProvisioningFailed (x142): storageclass.storage.k8s.io '
                        '"fast-ssd" not found')
    assert lines[4] == ("backups phase=Bound class=gp3 requested=20Gi capacity=20Gi access=RWO volume=pvc-1 "
                        "(volume phase=Bound reclaim=Delete) used-by=none")


def test_storage_default_class_static_binding_and_no_default():
    default = storage_digest(items(claim("a", cls=None)), items(storage_class("gp3", default=True)),
                             items(), namespace="prod")
    assert "a phase=Pending class=gp3 (default)" in default and "problem:" not in default
    none = storage_digest(items(claim("a", cls=None)), items(storage_class("gp3")), items(), namespace="prod")
    assert "problem: the claim names no storage class and no default class exists" in none
    static = storage_digest(items(claim("a", cls="")), items(), items(), namespace="prod")
    assert 'class="" (static binding only' in static and "storage classes: none" in static
    empty = storage_digest(items(), items(storage_class("gp3")), items(), namespace="prod")
    assert "no PersistentVolumeClaims in namespace prod" in empty


def test_storage_without_readable_classes_still_lists_the_claims():
    text = storage_digest(items(claim("a", cls="fast-ssd")), "the cluster refused this read (403 Forbidden)",
                          items(), namespace="prod")
    assert ("storage classes: not readable (the cluster refused this read (403 Forbidden)), so a missing "
            "class cannot be told apart") in text
    assert "a phase=Pending class=fast-ssd" in text and "problem:" not in text


def test_storage_ephemeral_volume_claims_name_their_pod():
    vols = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]
    text = storage_digest(items(claim("etl-1-scratch", volume="pvc-9")), items(storage_class("gp3")),
                          items(pod("etl-1", labels={}, volumes=vols)), namespace="prod")
    assert "used-by=etl-1" in text


# --- get_quotas --------------------------------------------------------------------------------

def quota(name, hard, used, scopes=None):
    return {"metadata": {"name": name}, "spec": {"hard": hard, **({"scopes": scopes} if scopes else {})},
            "status": {"hard": hard, "used": used}}


def test_quota_at_and_over_limit_are_flagged_first():
    text = quotas_digest(items(quota("roomy", {"pods": "50"}, {"pods": "5"}),
                               quota("prod-quota", {"pods": "5", "requests.memory": "8Gi", "requests.cpu": "2"},
                                     {"pods": "5", "requests.memory": "1408Mi", "requests.cpu": "2500m"})),
                         items(), namespace="prod")
    lines = text.splitlines()
    assert lines[0] == "quotas in prod: 2 ResourceQuotas (2 resources at or over its limit), 0 LimitRanges"
    assert lines[1] == "resourcequota prod-quota:"
    assert lines[2] == "  pods used=5 hard=5 AT LIMIT (100%): new objects that count against it are refused"
    assert lines[3].startswith("  requests.cpu used=2500m hard=2 OVER LIMIT (125%)")
    assert lines[4] == "  requests.memory used=1408Mi hard=8Gi (17%)"
    assert "resourcequota roomy:" in lines and "  pods used=5 hard=50 (10%)" in lines


def test_quota_with_unknown_use_limit_ranges_and_nothing_at_all():
    text = quotas_digest(items(quota("q", {"pods": "5", "count/jobs.batch": "x"}, {}, scopes=["BestEffort"])),
                         items({"metadata": {"name": "limits"}, "spec": {"limits": [
                             {"type": "Container", "default": {"memory": "512Mi"}, "max": {"memory": "4Gi"},
                              "defaultRequest": {"cpu": "100m"}}]}}), namespace="prod")
    assert "resourcequota q: scopes=BestEffort" in text and "  pods used=unknown hard=5" in text
    assert "AT LIMIT" not in text
    assert "  Container cpu defaultRequest=100m" in text
    assert "  Container memory default=512Mi max=4Gi" in text
    nothing = quotas_digest(items(), items(), namespace="prod")
    assert "no ResourceQuota and no LimitRange in namespace prod" in nothing


@pytest.mark.parametrize("text, value", [
    ("500m", Fraction(1, 2)), ("2", 2), ("1.5Gi", 3 * 2**29), ("128974848", 128974848), ("1e3", 1000),
    ("129M", 129 * 10**6), ("100Ki", 102400), (".5", Fraction(1, 2)), (3, 3),
    ("abc", None), ("", None), ("5 Gi", None), ("1e999", None), (None, None), (True, None)])
def test_parse_quantity(text, value):
    assert parse_quantity(text) == value


def test_percent():
    assert percent(Fraction(1408 * 2**20), Fraction(8 * 2**30)) == 17
    assert percent(None, 5) is None and percent(5, 0) is None
