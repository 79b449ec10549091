"""The metrics tools: get_metrics, query_metrics, list_metrics, read from Prometheus in one namespace.

A family module (see registry.py), offered only when the server has a Prometheus (--prometheus-url
or --prometheus-service: `NEEDS_PROMETHEUS`). Every query carries the namespace matcher: the
ones built here name it themselves; the model's PromQL gets it from digests.promql.scope_query,
which refuses a query that names another namespace; every answer's series must carry an
in-scope namespace label (check_series) or the answer is refused. Which reads serve each tool:

    get_metrics    the pods (one, or the workload's through the Kubernetes API), then five
                   Prometheus queries (QUERIES): one instant, four over the window
    query_metrics  /api/v1/query or /api/v1/query_range with the scoped query
    list_metrics   /api/v1/series of {namespace="NS"} (or the names matching `match`) over an hour

The registry imports this module in every server, to read NEEDS_PROMETHEUS; the PromQL parser
(digests/promql*.py, about a sixth of the server's own import time) is imported by the first
call that needs it, which a server without Prometheus never makes.
"""

import re
import time

from mcp_kubectl_server.digests.metrics import metrics_digest
from mcp_kubectl_server.digests.series import list_digest, query_digest
from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.tools.spec import NAMESPACE, POD, Tool
from mcp_kubectl_server.tools.workloads import PATHS, _selector_query
from mcp_kubectl_server.validate import check_subdomain

ORDER = 40  # after the cluster and config tools
NEEDS_PROMETHEUS = True
WINDOW_DEFAULT, WINDOW_MAX = 60, 1440
MAX_PODS = 30
PROMQL_MAX = 2000
MAX_POINTS = 1000
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job")
_WORKLOAD = re.compile(r"((?i:deployment|statefulset|daemonset|job))/([a-z0-9]([-a-z0-9.]*[a-z0-9])?)")
_MATCH = re.compile(r"[a-zA-Z0-9_:]{1,100}")
_THRESHOLD = re.compile(r"(?:>|>=)\s*(?:bool\s+)?(-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*$")

_SEL = 'namespace="$NS", pod=~"$PODS"'
_CTR = _SEL + ', container!="", container!="POD"'
QUERIES = {
    "info": ('{__name__=~"kube_pod_container_resource_requests|kube_pod_container_resource_limits'
             '|kube_pod_container_status_last_terminated_reason|kube_pod_container_status_restarts_total",'
             + _SEL + '}'),
    "gauges": ('{__name__=~"container_memory_working_set_bytes|kube_pod_container_status_restarts_total", '
               + _CTR + '}'),
    "cpu": "sum by (namespace, pod, container) (rate(container_cpu_usage_seconds_total{" + _CTR + "}[5m]))",
    "throttle": ("sum by (namespace, pod, container) (rate(container_cpu_cfs_throttled_periods_total{"
                 + _CTR + "}[5m])) / sum by (namespace, pod, container) "
                 "(rate(container_cpu_cfs_periods_total{" + _CTR + "}[5m]))"),
    "network": ('label_replace(sum by (namespace, pod) (rate(container_network_receive_errors_total{'
                + _SEL + '}[5m])), "direction", "rx", "", "") or label_replace(sum by (namespace, pod) '
                '(rate(container_network_transmit_errors_total{' + _SEL + '}[5m])), "direction", "tx", "", "")'),
}


def _whole(low, high):
    def check(name, value):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return f"{name}: must be a whole number from {low} to {high}, got {value!r:.40}"
        return None
    return check


def check_workload(name, value):
    if not isinstance(value, str) or not _WORKLOAD.fullmatch(value):
        return (f"{name}: {str(value)[:60]!r} is not KIND/NAME with KIND one of "
                f"{', '.join(WORKLOAD_KINDS)} (e.g. Deployment/checkout, as get_workloads prints it)")
    return None


def check_promql(name, value):
    if not isinstance(value, str) or not value.strip():
        return f"{name}: give a PromQL expression, e.g. sum by (namespace, pod) (rate(x[5m]))"
    if len(value) > PROMQL_MAX or "\x00" in value:
        return f"{name}: at most {PROMQL_MAX} characters of PromQL text"
    return None


def check_match(name, value):
    if not isinstance(value, str) or not _MATCH.fullmatch(value):
        return f"{name}: part of a metric name (letters, digits, '_' and ':'), e.g. http_requests"
    return None


WINDOW = {"type": "integer", "description": f"Minutes back from now (default {WINDOW_DEFAULT}, at most {WINDOW_MAX})."}
TOOLS = [
    Tool("get_metrics", "Container metrics",
         "The container signals of one pod or of the pods of one workload over a window (default 60 "
         "minutes) from Prometheus: CPU used against request and limit, CPU throttling (share of CFS "
         "periods throttled), memory working set against its limit with its trend and the time it "
         "would reach the limit, restarts and last termination reasons, network errors; min/avg/"
         "max/last each, and one ABNORMAL line per finding (throttled over 25%, memory over 90% of "
         "its limit or on course to reach it within the hour, restarts). Use it when pods look "
         "healthy but users see latency or errors, when an autoscaler is at its maximum, or to see "
         "when the next OOMKill comes.",
         {"namespace": NAMESPACE, "pod": POD,
          "workload": {"type": "string", "maxLength": 270,
                       "description": "KIND/NAME of a Deployment, StatefulSet, DaemonSet or Job "
                                      "(e.g. Deployment/checkout); give this or pod."},
          "window_minutes": WINDOW},
         ("namespace",),
         checks={"pod": check_subdomain, "workload": check_workload,
                 "window_minutes": _whole(5, WINDOW_MAX)}),
    Tool("query_metrics", "Query Prometheus",
         "Run a PromQL query in one namespace: instant, or over the last `minutes` (then each series "
         "is summarised: min/avg/max/last, trend, biggest change and when, and the first time over a "
         "threshold when the query ends in '> N'). The server adds namespace=\"NS\" to every "
         "selector: do not write a namespace matcher; keep `by (namespace, ...)` in aggregations or "
         "the answer is refused. At most 20 series are shown. Use it for an application's own "
         "metrics (find them with list_metrics), e.g. sum by (namespace, code) "
         "(rate(http_requests_total[5m])).",
         {"namespace": NAMESPACE,
          "promql": {"type": "string", "maxLength": PROMQL_MAX, "description": "The PromQL expression."},
          "minutes": {"type": "integer", "description": "Query a range: this many minutes back from "
                      "now (at most 1440). Leave out for an instant query."},
          "step_seconds": {"type": "integer", "description": "Range step (default: minutes, i.e. about "
                           "60 points)."}},
         ("namespace", "promql"),
         checks={"promql": check_promql, "minutes": _whole(1, WINDOW_MAX),
                 "step_seconds": _whole(1, 3600)}),
    Tool("list_metrics", "List metric names",
         "The metric names that have series in one namespace over the last hour, with series counts "
         "and label names, optionally only names containing `match`. Use it to find an "
         "application's own metrics (http_requests_total by code) before query_metrics.",
         {"namespace": NAMESPACE,
          "match": {"type": "string", "maxLength": 100, "description": "Part of a metric name, e.g. http."}},
         ("namespace",), checks={"match": check_match}),
]


def _api(reader, endpoint, params):
    client = getattr(reader, "prometheus", None)
    if client is None:
        raise ReadError("this server has no Prometheus (--prometheus-url or --prometheus-service)")
    return client.api(endpoint, params, reader=reader)


def _scoped(data, namespace):
    from mcp_kubectl_server.digests.promql import PromQLError, check_series  # see the docstring
    try:
        check_series(data, [namespace])
    except PromQLError as exc:
        raise ReadError(f"answer refused: {exc}") from None
    return data


def _range(reader, query, namespace, *, start, end, step):
    data = _api(reader, "query_range", {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                        "step": str(step)})
    return _scoped(data, namespace).get("result") or []


def _workload_pods(reader, namespace, workload):
    kind_text, name = workload.split("/", 1)
    kind = next(k for k in WORKLOAD_KINDS if k.lower() == kind_text.lower())
    try:
        obj = reader.get_json(PATHS[kind].format(ns=namespace) + "/" + name)
    except ReadError as exc:
        if exc.status != 404:
            raise
        raise ReadError(f"{kind} {namespace}/{name} not found (404); get_workloads lists the "
                        f"workloads of {namespace}", status=404) from None
    selector = _selector_query(obj)
    if not selector:
        return f"{kind} {namespace}/{name}", []
    pods = reader.list_json(f"/api/v1/namespaces/{namespace}/pods", {"labelSelector": selector})
    return f"{kind} {namespace}/{name}", sorted((p.get("metadata") or {}).get("name", "?")
                                                for p in pods.get("items") or [])


def get_metrics(reader, args):
    ns, window = args["namespace"], args.get("window_minutes", WINDOW_DEFAULT)
    if ("pod" in args) == ("workload" in args):
        raise ReadError("give exactly one of pod (a pod name from get_pods) or workload "
                        "(KIND/NAME from get_workloads)")
    if "pod" in args:
        subject, pods = f"pod {ns}/{args['pod']}", [args["pod"]]
    else:
        subject, pods = _workload_pods(reader, ns, args["workload"])
        if not pods:
            return f"get_metrics {subject}: the workload has no pods now, so there is nothing to read"
    note = ""
    if len(pods) > MAX_PODS:
        note = f"\n({len(pods) - MAX_PODS} more pods left out; ask for one pod by name)"
        pods = pods[:MAX_PODS]
    end = time.time()
    step = max(15, window * 60 // 60)
    pattern = "|".join(p.replace(".", "\\.") for p in pods)  # DNS names: only '.' is special

    def query(name):
        return QUERIES[name].replace("$NS", ns).replace("$PODS", pattern.replace("\\", "\\\\"))

    info = _api(reader, "query", {"query": query("info"), "time": f"{end:.3f}"})
    results = {"info": _scoped(info, ns).get("result") or []}
    for name in ("gauges", "cpu", "throttle", "network"):
        results[name] = _range(reader, query(name), ns, start=end - window * 60, end=end, step=step)
    return metrics_digest(subject, pods, results, window=window, end=end, step=step) + note


def query_metrics(reader, args):
    from mcp_kubectl_server.digests.promql import PromQLError, scope_query  # see the docstring
    ns, text = args["namespace"], args["promql"]
    try:
        query = scope_query(text, ns)
    except PromQLError as exc:
        raise ReadError(f"query refused: {exc}") from None
    end, minutes = time.time(), args.get("minutes")
    threshold = _THRESHOLD.search(text)
    threshold = float(threshold.group(1)) if threshold else None
    if minutes is None:
        data = _api(reader, "query", {"query": query, "time": f"{end:.3f}"})
        return query_digest(_scoped(data, ns), namespace=ns, query=query, end=end)
    step = args.get("step_seconds") or max(15, minutes)
    if minutes * 60 / step > MAX_POINTS:
        raise ReadError(f"step_seconds: {step}s over {minutes} min is more than {MAX_POINTS} points a"
                        f" series; use step_seconds >= {minutes * 60 // MAX_POINTS + 1}")
    data = _api(reader, "query_range", {"query": query, "start": f"{end - minutes * 60:.3f}",
                                        "end": f"{end:.3f}", "step": str(step)})
    return query_digest(_scoped(data, ns), namespace=ns, query=query, end=end, minutes=minutes,
                        step=step, threshold=threshold)


def list_metrics(reader, args):
    ns, match = args["namespace"], args.get("match")
    selector = (f'{{__name__=~".*{match}.*", namespace="{ns}"}}' if match else f'{{namespace="{ns}"}}')
    end = time.time()
    found = _api(reader, "series", {"match[]": selector, "start": f"{end - 3600:.3f}", "end": f"{end:.3f}"})
    stray = [s for s in found or [] if not isinstance(s, dict) or s.get("namespace") != ns]
    if stray:
        raise ReadError(f"answer refused: {len(stray)} series outside namespace {ns} came back")
    return list_digest(found, namespace=ns, minutes=60, match=match, source=reader.prometheus.describe())


HANDLERS = {"get_metrics": get_metrics, "query_metrics": query_metrics, "list_metrics": list_metrics}
