"""get_changes: what changed in a namespace over a window, in time order (digests/changes.py).

A family module (see registry.py). The reads, all lists of the namespace unless said:

    workloads     deployments, statefulsets, daemonsets (apps/v1), cronjobs, jobs (batch/v1), and
                  their revisions: replicasets, controllerrevisions
    edited kinds  configmaps, services, serviceaccounts, resourcequotas, limitranges (v1),
                  ingresses, networkpolicies (networking.k8s.io/v1), horizontalpodautoscalers
                  (autoscaling/v2), poddisruptionbudgets (policy/v1), roles, rolebindings (rbac)
    pods, events  the namespace's pods (OOM kills, evictions; the nodes they run on) and events
    nodes         /api/v1/nodes and the node events in namespace default, only with the
                  cluster-scoped reads on; a node change is shown only for a node that runs a pod
                  of the namespace
    custom kinds  the namespaced kinds get_custom_resources has a digest for (Argo CD, Flux,
                  KEDA, Istio, cert-manager, Chaos Mesh) that discovery says the cluster serves:
                  their edits and creations (the proxy opens their paths once, as that tool does)

With `kind`, only the reads that can yield that kind's changes are made. A read that fails
(RBAC, a kind the cluster does not serve) is named in a note; the rest is still shown.
"""

from datetime import datetime, timedelta, timezone

from mcp_kubectl_server.digests import changes as digest
from mcp_kubectl_server.digests.custom import digest_for, holds_secrets
from mcp_kubectl_server.read.discovery import read_discovery
from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.tools.spec import NAMESPACE, Tool

SINCE_DEFAULT = 180
SINCE_MAX = 10080  # a week
WORKLOADS = {"Deployment": ("/apis/apps/v1", "deployments", "replicasets"),
             "StatefulSet": ("/apis/apps/v1", "statefulsets", "controllerrevisions"),
             "DaemonSet": ("/apis/apps/v1", "daemonsets", "controllerrevisions"),
             "CronJob": ("/apis/batch/v1", "cronjobs", None)}
EDITED = {"ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
          "Service": "/api/v1/namespaces/{ns}/services",
          "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
          "ResourceQuota": "/api/v1/namespaces/{ns}/resourcequotas",
          "LimitRange": "/api/v1/namespaces/{ns}/limitranges",
          "Ingress": "/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses",
          "NetworkPolicy": "/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
          "HorizontalPodAutoscaler": "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers",
          "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
          "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
          "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings"}
JOBS = "/apis/batch/v1/namespaces/{ns}/jobs"
# The custom kinds whose edits are listed (those get_custom_resources writes a digest for).
CUSTOM_KINDS = ("Application", "Kustomization", "HelmRelease", "GitRepository", "HelmRepository",
                "ScaledObject", "ScaledJob", "AuthorizationPolicy", "PeerAuthentication",
                "VirtualService", "DestinationRule", "Certificate", "Issuer", "Schedule",
                "PodChaos", "NetworkChaos", "IOChaos", "StressChaos", "TimeChaos", "DNSChaos",
                "HTTPChaos")
KINDS = tuple(WORKLOADS) + ("Job",) + tuple(EDITED) + ("Pod", "Node") + CUSTOM_KINDS

TOOL = Tool(
    "get_changes", "What changed, in time order",
    "Every change in a namespace over a window, one line each, oldest first (newest kept when "
    "cut), each with its time, how long ago, the object, what changed and who changed it (field "
    "manager and operation from managedFields): rollouts and rollbacks with what differs from the "
    "revision before (images, env names, resources, probes, volumes and the ConfigMaps/Secrets "
    "they name), scaling by a person or an autoscaler, edits of ConfigMaps (which keys), "
    "Services, Ingresses, NetworkPolicies, HPAs, PodDisruptionBudgets, quotas, limit ranges, "
    "ServiceAccounts and RBAC, Job runs and their results, evictions, preemptions and OOM kills, "
    "changes of the nodes the namespace's pods run on (NotReady, cordon, taints, new nodes), and "
    "edits of the operators' objects (Argo CD, Flux, KEDA, Istio, cert-manager, Chaos Mesh). "
    "Use it right after get_pods to ask what changed just before the trouble began.",
    {"namespace": NAMESPACE,
     "since_minutes": {"type": "integer", "minimum": 1, "maximum": SINCE_MAX,
                       "description": f"How far back to look, in minutes (default {SINCE_DEFAULT}, "
                                      f"at most {SINCE_MAX}: a week)."},
     "kind": {"type": "string", "enum": list(KINDS),
              "description": "Only changes of this kind of object (default: every kind)."}},
    ("namespace",),
    checks={"since_minutes": lambda name, value: None if (
        isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= SINCE_MAX)
        else f"{name}: must be a whole number from 1 to {SINCE_MAX}, got {value!r:.40}"})


class _Reads:
    """The lists of one call; a failed read becomes a note, not a failed tool."""

    def __init__(self, reader):
        self.reader, self.notes = reader, []

    def items(self, path, query=None):
        try:
            return self.reader.list_json(path, query).get("items") or []
        except ReadError as exc:
            if exc.status is None or exc.status >= 500:
                raise
            self.notes.append(f"note: not read: {path} ({exc})")
            return []


def _workload_changes(reads, ns, wanted, since):
    out, jobs = [], None
    for kind, (prefix, plural, revisions) in WORKLOADS.items():
        if not wanted(kind):
            continue
        owned = reads.items(f"{prefix}/namespaces/{ns}/{revisions}") if revisions else []
        for obj in reads.items(f"{prefix}/namespaces/{ns}/{plural}"):
            obj = dict(obj, kind=kind)
            uid = (obj.get("metadata") or {}).get("uid")
            mine = [dict(r, kind="ReplicaSet" if plural == "deployments" else "ControllerRevision")
                    for r in owned if any(o.get("uid") == uid for o in
                                          (r.get("metadata") or {}).get("ownerReferences") or [])]
            out += digest.rollouts(obj, mine, since) + digest.edits(kind, obj, since)
    if wanted("Job"):
        jobs = reads.items(JOBS.format(ns=ns))
        for job in jobs:
            out += digest.job_runs(job, since)
    return out


def _node_changes(reads, pods, since):
    hosts = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            hosts[node] = hosts.get(node, 0) + 1
    out = []
    for node in reads.items("/api/v1/nodes"):
        here = hosts.get((node.get("metadata") or {}).get("name"))
        if here:
            out += digest.node_changes(node, since, here)
    events = reads.items("/api/v1/namespaces/default/events", {"fieldSelector": "involvedObject.kind=Node"})
    out += digest.from_events([e for e in events if (e.get("involvedObject") or {}).get("name") in hosts],
                              since)
    return out


def _custom_changes(reads, ns, wanted, since):
    """Edits of the custom kinds with a written digest that the cluster serves."""
    try:
        discovery = read_discovery(reads.reader)
    except ReadError as exc:
        reads.notes.append(f"note: custom resources not read: discovery failed ({exc})")
        return []
    kinds = [k for k in discovery.custom if k.namespaced and wanted(k.kind)
             and digest_for(k.group, k.kind) and not holds_secrets(k.group, k.kind)]
    if not kinds:
        return []
    reads.reader.allow_custom(kinds)
    out = []
    for kind in kinds:
        for obj in reads.items(f"/apis/{kind.group}/{kind.version}/namespaces/{ns}/{kind.plural}"):
            out += digest.edits(kind.kind, obj, since)
    return out


def get_changes(reader, args, *, now=None):
    ns, kind = args["namespace"], args.get("kind")
    now = now or datetime.now(timezone.utc)
    since = now - timedelta(minutes=args.get("since_minutes", SINCE_DEFAULT))
    wanted = (lambda k: k == kind) if kind else (lambda k: True)
    reads = _Reads(reader)
    found = _workload_changes(reads, ns, wanted, since)
    told = [c for c in digest.from_events(reads.items(f"/api/v1/namespaces/{ns}/events"), since)
            if wanted(c.subject.partition("/")[0])]
    evicted = {c.subject for c in told if c.what.startswith("evicted")}
    rescaled = {c.subject for c in told if c.what.startswith("autoscaled")}
    for edited, path in EDITED.items():
        if wanted(edited):
            for obj in reads.items(path.format(ns=ns)):
                found += digest.edits(edited, obj, since)
                if edited == "HorizontalPodAutoscaler" and f"{edited}/{obj['metadata']['name']}" not in rescaled:
                    found += digest.hpa_scaling(obj, since)  # the last scale, when no event tells it
    pods = reads.items(f"/api/v1/namespaces/{ns}/pods") if wanted("Pod") or wanted("Node") else []
    for pod in pods if wanted("Pod") else ():
        found += digest.pod_terminations(pod, since, eviction_told=f"Pod/{pod['metadata']['name']}" in evicted)
    found += told
    if wanted("Node") and getattr(reader, "cluster_scoped", True):
        found += _node_changes(reads, pods, since)
    if not kind or kind in CUSTOM_KINDS:
        found += _custom_changes(reads, ns, wanted, since)
    text = digest.changes_digest(found, namespace=ns, since=since, now=now, kind=kind)
    return "\n".join([text, *reads.notes])


ORDER = 15  # right after the pod and workload tools: "what changed" follows "what is broken"
TOOLS = [TOOL]
HANDLERS = {TOOL.name: get_changes}
