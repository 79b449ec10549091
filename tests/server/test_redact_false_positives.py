"""What triage must read stays as it is: the redactor changes nothing but planted secrets.

- every tool output for every cluster the eval scenarios run on, and the 2,000-pod `large`
  cluster, called in-process through the real handlers and the simulator's own request handler
  (tests/support/sim_reader.py), each a real answer (no tool error): no [REDACTED] anywhere but
  in the crashloop logs' four planted lines, which are checked exactly;
- every distinct string of those clusters' objects and logs, through redact() alone (a string
  or an output one cluster's test found kept is not checked again in another's: SEEN_KEPT);
- the must-keep list as a table: each value, in the contexts triage sees it in, unchanged.
"""

import json
from pathlib import Path

import pytest

from fixtures.kube_sim.scenarios.core import SECRET_LINES
from fixtures.kube_sim.sim import start_sim
from fixtures.kube_sim.store import load_cluster
from mcp_kubectl_server.digests.custom.common import holds_secrets
from mcp_kubectl_server.redact import MASK, is_secret_key, redact
from mcp_kubectl_server.tools.registry import load, run_tool
from tests.support.sim_reader import sim_reader

CLUSTERS = sorted(p.stem for p in (Path(__file__).parents[2] / "fixtures" / "clusters").glob(
    "*.json") if p.stem != "secrets")
# The crashloop scenario's logs carry four planted secrets on purpose (and injection's, built on
# it): each line must come out exactly so, the secret hidden and the rest of the line kept.
PLANTED_LINES = {
    SECRET_LINES[0]: SECRET_LINES[0].replace("hunter2-prod", MASK),
    SECRET_LINES[1]: SECRET_LINES[1].split("Authorization: ")[0] + "Authorization: " + MASK,
    SECRET_LINES[2]: SECRET_LINES[2].replace("AKIASIMULATEDKEY0042", MASK),
    SECRET_LINES[3]: SECRET_LINES[3].split("token=")[0] + "token=" + MASK,
}
SAMPLE = 400   # in a namespace of thousands of pods: every 400th pod and workload, and the unhealthy
HUGE = 500
# redact() is a pure function: a string or an output one cluster's test found left as it is needs
# no second look in another's (the clusters share their base objects, so most outputs repeat).
# What each test produces is produced all the same: every call is made, every answer checked real.
SEEN_KEPT = set()


def test_the_planted_lines_lose_only_their_secret():
    for line, expected in PLANTED_LINES.items():
        assert redact(line) == expected


def _objects(cluster):
    by_kind = {}
    for obj in cluster["objects"]:
        by_kind.setdefault(obj["kind"], []).append(obj)
    return by_kind


def _pod_calls(pod, *, sampled):
    md, status = pod["metadata"], pod.get("status", {})
    statuses = status.get("containerStatuses", [])
    healthy = status.get("phase") == "Running" and all(s.get("ready") for s in statuses)
    if sampled and healthy:
        return []
    where = {"namespace": md["namespace"], "name": md["name"]}
    calls = [("describe_pod", where)]   # its events too (get_events runs per namespace)
    restarted = {c["name"] for c in statuses + status.get("initContainerStatuses", [])
                 if c.get("restartCount") or c.get("lastState")}
    for container in pod["spec"].get("initContainers", []) + pod["spec"]["containers"]:
        calls.append(("get_logs", dict(where, container=container["name"])))
        if container["name"] in restarted:
            calls.append(("get_logs", dict(where, container=container["name"], previous=True)))
    return calls


def calls_for(cluster):
    """Every tool call a triage of this cluster could make (sampled in huge namespaces)."""
    by_kind, registry = _objects(cluster), load()
    namespaces = sorted({o["metadata"]["namespace"] for o in cluster["objects"]
                         if o["metadata"].get("namespace")})
    pods = by_kind.get("Pod", [])
    if len(pods) > HUGE:   # the huge namespace only: the others are every other cluster's base
        counts = {ns: sum(p["metadata"]["namespace"] == ns for p in pods) for ns in namespaces}
        namespaces = [ns for ns in namespaces if counts[ns] > HUGE]
        pods = [p for p in pods if p["metadata"]["namespace"] in namespaces]
    calls = [(name, {"namespace": ns}) for ns in namespaces for name, tool in
             registry.tools.items() if tool.namespaced and tool.required == ("namespace",)]
    huge = len(pods) > HUGE
    nodes = by_kind.get("Node", [])[:1 if huge else None]
    calls += [("get_nodes", {})] + [("describe_node", {"name": n["metadata"]["name"]}) for n in nodes]
    broken = set()
    for i, pod in enumerate(pods):
        pod_calls = _pod_calls(pod, sampled=huge and i % SAMPLE)
        calls += pod_calls
        if pod_calls:
            broken.add(pod["metadata"]["name"].rsplit("-", 2)[0])
    for kind in ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob"):
        calls += [("describe_workload", {"namespace": o["metadata"]["namespace"], "kind": kind,
                                         "name": o["metadata"]["name"]})
                  for o in by_kind.get(kind, []) if not huge or o["metadata"]["name"] in broken]
    calls += [("get_config", {"namespace": o["metadata"]["namespace"],
                              "name": o["metadata"]["name"]}) for o in by_kind.get("ConfigMap", [])]
    return calls, namespaces


def _untimed(line):
    return line.strip().removeprefix("(log) ").split(" ", 1)[-1]


def _masked_lines(text):
    return [line for line in text.splitlines() if MASK in line]


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@pytest.mark.parametrize("name", [
    pytest.param(n, marks=pytest.mark.slow(reason="every tool over 2,000 pods, in-process"))
    if n == "large" else n for n in CLUSTERS])
def test_every_tool_output_and_string_of_every_scenario_cluster_is_left_as_it_is(name):
    cluster = load_cluster(name)
    planted = {_untimed(redact(line)) for line in PLANTED_LINES}   # the simulator moves times
    # no tool reads a Secret, nor shows a value of a kind that holds secrets (a SealedSecret)
    readable = [o for o in cluster["objects"] if o["kind"] != "Secret"
                and not holds_secrets(o["apiVersion"].rpartition("/")[0], o["kind"])]
    strings = set(_strings(readable)) | set(_strings(cluster["logs"]))
    changed = [s for s in strings - SEEN_KEPT if redact(s) != s and _untimed(redact(s)) not in planted]
    assert changed == [] and len(strings) > 100
    SEEN_KEPT.update(strings)
    calls, namespaces = calls_for(cluster)
    with start_sim(name, serve_metrics=False) as sim:   # the metrics tools are not among them
        reader = sim_reader(sim, namespaces)
        for tool, arguments in calls:
            text, is_error = run_tool(reader.for_call(), tool, arguments)
            assert not is_error, (tool, json.dumps(arguments), text[:300])   # a real answer
            if text in SEEN_KEPT:
                continue
            redacted = redact(text)   # as the server and the loop do on the way out
            unexplained = [ln for ln in _masked_lines(redacted) if _untimed(ln) not in planted
                           and not _a_secret_named_key(ln)]
            assert unexplained == [], (tool, json.dumps(arguments))
            SEEN_KEPT.add(text)


def _a_secret_named_key(line):
    """`DB_PASSWORD=[REDACTED]`: get_config hides a secret-named key's value whatever it is
    (missing-secret's billing-config holds a stray DB_PASSWORD on purpose)."""
    key, _, value = line.strip().partition("=")
    return value == MASK and is_secret_key(key)


MUST_KEEP = [
    # image digests, and git SHAs or hex in image tags
    "registry.example.com/shop/cart@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
    "imageID=docker.io/library/nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
    "image=registry.example.com/shop/cart:3f1c2e9a7b4d5e6f8a9b0c1d2e3f4a5b6c7d8e9f",
    "image: ghcr.io/acme/api:sha-9f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6",
    "containerID=containerd://8f3c2e1a7b4d5e6f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f",
    # pod-template hashes and generated name suffixes
    "checkout-6f8d9c7b5d-x7k2p phase=Running ready=0/1 restarts=47 node=node-a age=3h",
    "pod-template-hash=6f8d9c7b5d controller-revision-hash=web-7c9d8b6f5d",
    "ReplicaSet/checkout-6f8d9c7b5d scaled up; Job/backup-28833120 created pod backup-28833120-q2w8z",
    # UIDs, resourceVersions, IPs, timestamps
    "uid=731b8fb7-766e-58d9-8216-ee2e3f0c9a11 resourceVersion=918273645",
    "pod=checkout-6f8d9c7b5d-m4q9z_731b8fb7-766e-58d9-8216-ee2e3f0c9a11(token refresh)",
    "podIP=10.244.1.17 hostIP=10.0.0.12 clusterIP=10.96.0.10 ipv6=fd00:10:244::1a2b/64",
    "2026-11-29T11:58:29.105Z lastTransitionTime=2026-11-29T08:00:01Z",
    # Kubernetes object and label names, also beside credential words
    "app.kubernetes.io/name=checkout app.kubernetes.io/instance=checkout-prod-eu-west-1",
    "env PAYMENT_API_KEY from secret payment-credentials key api-key",
    "volume token from projected kube-api-access-7x9kq (serviceAccountToken expires 3607s)",
    "secret default-token-4xk9z not found; secret registry-credentials-v2 mounted",
    "Successfully assigned prod/auth-service-5d9c7b8f6d-q8w2r to node-b",
    "KubeletHasSufficientMemory kubelet has sufficient memory available",
    "service auth-gateway selector app=auth-gateway,tier=frontend ports 443->8443/TCP",
    "configmap auth-config key session-timeout=30m signing-algorithm=RS256",
    # ordinary log text
    "GET /api/v1/namespaces/prod/pods/checkout-6f8d9c7b5d-x7k2p/log?container=checkout 200",
    "at com.example.checkout.PaymentServiceClient.authorize(PaymentServiceClient.java:142)",
    "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span_id=00f067aa0ba902b7 auth ok",
    "token bucket refilled: 20 tokens available; session count=42",
    "the password is too short; the token is invalid; secret rotation is disabled",
]


@pytest.mark.parametrize("text", MUST_KEEP)
def test_the_must_keep_list_is_kept_verbatim(text):
    assert redact(text) == text
