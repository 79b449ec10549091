"""The workload tools: get_workloads and describe_workload (definitions, API reads, digests).

A family module (see registry.py): `TOOLS` are `spec.Tool` entries, `HANDLERS[name](reader,
args)` runs a checked call through the Reader (get_json / list_json over API paths) and returns
the digest text, raising ReadError for a failed read. Paths are built here from checked names
only. Which reads serve each tool:

    get_workloads      deployments, statefulsets, daemonsets (apps/v1), jobs, cronjobs (batch/v1),
                       horizontalpodautoscalers (autoscaling/v2) of the namespace
    describe_workload  the workload; its revisions (replicasets or controllerrevisions, or the
                       jobs of a CronJob); the pods its selector matches; the namespace's HPAs and
                       events (only those about the workload and its revisions are shown)
"""

from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.tools.spec import NAMESPACE, Tool
from mcp_kubectl_server.validate import DNS1123_SUBDOMAIN
from mcp_kubectl_server.digests.workload_detail import workload_digest
from mcp_kubectl_server.digests.workloads import KINDS, hpa_for, owned_by, workloads_digest

PATHS = {"Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
         "StatefulSet": "/apis/apps/v1/namespaces/{ns}/statefulsets",
         "DaemonSet": "/apis/apps/v1/namespaces/{ns}/daemonsets",
         "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
         "CronJob": "/apis/batch/v1/namespaces/{ns}/cronjobs"}
HPAS = "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"
REVISIONS = {"Deployment": "/apis/apps/v1/namespaces/{ns}/replicasets",
             "StatefulSet": "/apis/apps/v1/namespaces/{ns}/controllerrevisions",
             "DaemonSet": "/apis/apps/v1/namespaces/{ns}/controllerrevisions",
             "CronJob": "/apis/batch/v1/namespaces/{ns}/jobs"}
# List items carry no kind of their own (the list has it): the digests need it on each revision.
REVISION_KINDS = {"Deployment": "ReplicaSet", "StatefulSet": "ControllerRevision",
                  "DaemonSet": "ControllerRevision", "CronJob": "Job"}

TOOLS = [
    Tool("get_workloads", "List workloads",
         "One line per Deployment, StatefulSet, DaemonSet, Job and CronJob of a namespace: "
         "desired/updated/ready/available, the conditions that are not healthy "
         "(ProgressDeadlineExceeded, ReplicaFailure, Job Failed/BackoffLimitExceeded, a CronJob's "
         "last schedule, last success and last Job) and the HorizontalPodAutoscaler that drives it "
         "(min/max/current/desired, limited or not). Unhealthy first. Use it when pods alone do not "
         "explain an incident: a rollout that does not finish, a failed batch Job whose pods and "
         "events are gone, an autoscaler at its maximum. The conditions outlive events (which "
         "expire after an hour).",
         {"namespace": NAMESPACE}, ("namespace",)),
    Tool("describe_workload", "Describe a workload",
         "One workload in full: strategy, selector, replica counts, conditions with reason, "
         "message and age, its revisions (number, images, ready counts, the ConfigMaps, Secrets and "
         "claims each mounts, by name) and what changed in the pod template between the current and "
         "the previous revision (images, env names and their sources, resource requests/limits, "
         "probes, config checksum annotations, volumes and what they mount, service account, image "
         "pull secrets, DNS, scheduling), which field manager last wrote each field of the workload "
         "and its template and when (from managedFields: manager, operation, time), its HPA, its "
         "pods' states one line each, and its recent events. Use it after get_workloads, or when a "
         "new revision's pods fail, to see what the rollout changed and who changed it.",
         {"namespace": NAMESPACE,
          "kind": {"type": "string", "enum": list(KINDS),
                   "description": "Workload kind, as get_workloads prints it."},
          "name": {"type": "string", "pattern": DNS1123_SUBDOMAIN, "maxLength": 253,
                   "description": "Exact workload name as printed by get_workloads (after the '/')."}},
         ("namespace", "kind", "name")),
]


def get_workloads(reader, args):
    ns = args["namespace"]
    lists = {kind: reader.list_json(path.format(ns=ns)).get("items") or [] for kind, path in PATHS.items()}
    hpas = reader.list_json(HPAS.format(ns=ns)).get("items") or []
    return workloads_digest(lists, namespace=ns, hpas=hpas)


def _selector_query(obj):
    """labelSelector for the pods a workload selects (matchLabels and matchExpressions)."""
    spec = obj.get("spec") or {}
    selector = spec.get("selector") or {}
    terms = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or []:
        op, key, values = expr.get("operator"), expr.get("key", ""), ",".join(expr.get("values") or [])
        terms.append({"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})",
                      "Exists": key, "DoesNotExist": f"!{key}"}.get(op, key))
    return ",".join(terms)


def _pods(reader, ns, obj, revisions):
    if obj.get("kind") == "CronJob":  # a CronJob has no selector: its pods are its Jobs' pods
        names = {(j.get("metadata") or {}).get("name") for j in revisions}
        pods = reader.list_json(f"/api/v1/namespaces/{ns}/pods").get("items") or []
        return [p for p in pods if ((p.get("metadata") or {}).get("labels") or {}).get("job-name") in names]
    selector = _selector_query(obj)
    if not selector:
        return []
    return reader.list_json(f"/api/v1/namespaces/{ns}/pods", {"labelSelector": selector}).get("items") or []


def describe_workload(reader, args):
    ns, kind, name = args["namespace"], args["kind"], args["name"]
    try:
        obj = dict(reader.get_json(PATHS[kind].format(ns=ns) + "/" + name), kind=kind)
    except ReadError as exc:
        if exc.status != 404:
            raise
        raise ReadError(f"{kind} {ns}/{name} not found (404); get_workloads lists the workloads of {ns}"
                        " with their kinds", status=404) from None
    revisions = []
    if kind in REVISIONS:
        # A Deployment's ReplicaSets carry its selector's labels: narrow the list on the server.
        selector = _selector_query(obj) if kind == "Deployment" else ""
        query = {"labelSelector": selector} if selector else None
        candidates = reader.list_json(REVISIONS[kind].format(ns=ns), query).get("items") or []
        revisions = [dict(r, kind=REVISION_KINDS[kind]) for r in candidates if owned_by(r, obj)]
    pods = _pods(reader, ns, obj, revisions)
    hpa = hpa_for(obj, reader.list_json(HPAS.format(ns=ns)).get("items") or []) if kind in (
        "Deployment", "StatefulSet") else None
    mine = {name} | {(r.get("metadata") or {}).get("name") for r in revisions}
    events = [e for e in reader.list_json(f"/api/v1/namespaces/{ns}/events").get("items") or []
              if (e.get("involvedObject") or {}).get("name") in mine]
    return workload_digest(obj, revisions=revisions, hpa=hpa, pods=pods, events=events)


ORDER = 10  # after the pod tools
HANDLERS = {"get_workloads": get_workloads, "describe_workload": describe_workload}
