"""get_metrics: a pod's or a workload's container signals over a window, from Prometheus series.

The tool sends five queries (see tools/metrics.py) and hands their results here by name:

    info      instant: kube-state-metrics requests, limits, restarts, last terminated reason
    gauges    range: container_memory_working_set_bytes and the restarts counter
    cpu       range: CPU cores used (rate of container_cpu_usage_seconds_total)
    throttle  range: share of CFS periods throttled
    network   range: receive/transmit errors per second per pod (label `direction`)

and gets one block per container, abnormal findings first, one plain line each:

    get_metrics Deployment prod/search over the last 60 min to 12:00Z (2 pods; min/avg/max/last)
    ABNORMAL search-5f-h2kqw/search: memory climbs +3.1Mi/min: it reaches its 256Mi limit in about
      9 min (around 12:09Z), when the container is OOMKilled again
    pod search-5f-h2kqw container search:
      cpu cores min=40m avg=52m max=70m last=61m; request 100m (61%), limit none
      ...

A signal whose series is absent says so ("no cAdvisor series"); it is never shown as zero.
"""

from mcp_kubectl_server.digests.series import points, since_last_drop, slope_per_minute, stats, clock

THROTTLED = 0.25       # share of CFS periods
MEMORY_NEAR = 0.90     # of the limit
HORIZON_MIN = 60       # "on course to reach the limit within the hour"
MI = 2 ** 20
CADVISOR = "no cAdvisor series for this container"
KSM = "no kube-state-metrics series for this container"


def cores(v):
    return f"{v * 1000:.0f}m" if abs(v) < 10 else f"{v:.1f}"


def mib(v):
    return f"{v / 2**30:.1f}Gi" if abs(v) >= 10 * 2**30 else f"{v / 2**20:.0f}Mi"


def share(v):
    return f"{v * 100:.0f}%"


def rate(v):
    return f"{v:.2g}/s" if v else "0/s"


def _four(pts, fmt):
    lo, avg, hi, last = stats(pts)
    return f"min={fmt(lo)} avg={fmt(avg)} max={fmt(hi)} last={fmt(last)}"


def _containers(results):
    """{(pod, container): {signal: series or value}} from the named results."""
    found = {}

    def slot(metric):
        key = (metric.get("pod", "?"), metric.get("container", "?"))
        return found.setdefault(key, {})

    for series in results.get("info") or []:
        metric = series.get("metric") or {}
        name, pts = metric.get("__name__", ""), points(series)
        value = pts[-1][1] if pts else None
        entry = slot(metric)
        if name == "kube_pod_container_status_last_terminated_reason" and value:
            entry["reason"] = metric.get("reason", "?")
        elif name == "kube_pod_container_status_restarts_total":
            entry["restarts_total"] = value
        elif name.startswith("kube_pod_container_resource_"):
            kind = "request" if name.endswith("requests") else "limit"
            entry[f"{metric.get('resource', '?')}_{kind}"] = value
        entry["ksm"] = True
    for series in results.get("gauges") or []:
        metric = series.get("metric") or {}
        signal = ("memory" if metric.get("__name__") == "container_memory_working_set_bytes"
                  else "restarts")
        slot(metric)[signal] = points(series)
    for signal in ("cpu", "throttle"):
        for series in results.get(signal) or []:
            slot(series.get("metric") or {})[signal] = points(series)
    return found


def _network(results):
    """{pod: {"rx": pts, "tx": pts}}."""
    found = {}
    for series in results.get("network") or []:
        metric = series.get("metric") or {}
        found.setdefault(metric.get("pod", "?"), {})[metric.get("direction", "?")] = points(series)
    return found


def restarts_in(pts):
    """Restarts counted by a counter's points over the window (a reset counts what follows it)."""
    total = 0.0
    for (_, a), (_, b) in zip(pts, pts[1:]):
        total += b - a if b >= a else b
    return round(total)


def _cpu_line(entry):
    pts = entry.get("cpu")
    if not pts:
        return f"  cpu: {CADVISOR} (container_cpu_usage_seconds_total)"
    last = pts[-1][1]
    parts = []
    for kind in ("request", "limit"):
        value = entry.get(f"cpu_{kind}")
        parts.append(f"{kind} {cores(value)} ({last / value * 100:.0f}% of it)" if value
                     else f"{kind} {'none' if entry.get('ksm') else 'unknown'}")
    return f"  cpu cores {_four(pts, cores)}; " + ", ".join(parts)


def _memory(entry, end):
    """(line, abnormal or None) for the memory working set against the limit."""
    pts = entry.get("memory")
    if not pts:
        return f"  memory: {CADVISOR} (container_memory_working_set_bytes)", None
    limit, last = entry.get("memory_limit"), pts[-1][1]
    climb = since_last_drop(pts)
    slope = slope_per_minute(climb)
    trend = (f"trend {'+' if slope > 0 else ''}{slope / MI:.1f}Mi/min since {clock(climb[0][0])}"
             if slope is not None else f"fell back at {clock(climb[0][0])}, too few points since")
    line = f"  memory working set {_four(pts, mib)}; {trend}"
    if not limit:
        return line + f"; limit {'none' if entry.get('ksm') else 'unknown'}", None
    line += f"; limit {mib(limit)} ({last / limit * 100:.0f}%)"
    if last >= MEMORY_NEAR * limit:
        return line, (f"memory working set {mib(last)} is {last / limit * 100:.0f}% of its "
                      f"{mib(limit)} limit: the next allocation peak gets it OOMKilled")
    if slope and slope > 0:
        minutes = (limit - last) / slope
        if minutes <= HORIZON_MIN:
            due = end + minutes * 60
            return line + f"; reaches the limit in about {minutes:.0f} min", (
                f"memory climbs {trend[6:]}: it reaches its {mib(limit)} limit in about {minutes:.0f} "
                f"min (around {clock(due)}), when the container is OOMKilled")
    return line, None


def _restarts(entry, window):
    pts = entry.get("restarts")
    reason = entry.get("reason")
    total = entry.get("restarts_total")
    last = f"last terminated: {reason}" if reason else "last terminated: none recorded"
    if not pts:
        if not entry.get("ksm"):
            return f"  restarts: {KSM} (kube_pod_container_status_restarts_total)", None
        return f"  restarts: no counter over the window ({total:.0f} in total); {last}", None
    count = restarts_in(pts)
    line = f"  restarts {count} in the window ({pts[-1][1]:.0f} in total); {last}"
    if count:
        return line, f"restarted {count} time{'s' if count != 1 else ''} in the last {window} min ({last})"
    return line, None


def container_block(pod, container, entry, *, window, end):
    """(lines, abnormal findings) for one container."""
    lines = [f"pod {pod} container {container}:", _cpu_line(entry)]
    findings = []
    throttle = entry.get("throttle")
    if throttle:
        lines.append(f"  cpu throttled {_four(throttle, share)} of CFS periods")
        avg, last = stats(throttle)[1], throttle[-1][1]
        if max(avg, last) > THROTTLED:
            limit = entry.get("cpu_limit")
            findings.append(f"CPU throttled in {share(last)} of CFS periods (avg {share(avg)}; over "
                            f"{share(THROTTLED)})" + (f": its {cores(limit)} CPU limit holds it back"
                                                     if limit else ""))
    else:
        lines.append(f"  cpu throttled: {CADVISOR} (container_cpu_cfs_throttled_periods_total;"
                     " none when the container has no CPU limit)")
    for line, finding in (_memory(entry, end), _restarts(entry, window)):
        lines.append(line)
        if finding:
            findings.append(finding)
    return lines, findings


def _network_lines(pod, net):
    if not net:
        return [f"  network: {CADVISOR.replace('container', 'pod')}"
                " (container_network_receive_errors_total)"], []
    parts, findings = [], []
    for direction in ("rx", "tx"):
        pts = net.get(direction)
        parts.append(f"{direction} errors {_four(pts, rate)}" if pts else f"{direction} errors: absent")
        if pts and stats(pts)[2] > 0:
            findings.append(f"network {direction} errors up to {rate(stats(pts)[2])}")
    return [f"pod {pod} network: " + "; ".join(parts)], findings


def metrics_digest(subject, pods, results, *, window, end, step):
    """The get_metrics text: `subject` ('pod prod/x' or 'Deployment prod/web'), the pod names."""
    containers, network = _containers(results), _network(results)
    head = (f"get_metrics {subject} over the last {window} min to {clock(end)} ({len(pods)} "
            f"pod{'s' if len(pods) != 1 else ''}, step {step}s; min/avg/max/last)")
    abnormal, body = [], []
    for pod in pods:
        keys = sorted(k for k in containers if k[0] == pod)
        if not keys:
            body.append(f"pod {pod}: no cAdvisor and no kube-state-metrics series in the window:"
                        " Prometheus does not scrape this pod's node or kube-state-metrics")
            continue
        for _, container in keys:
            lines, findings = container_block(pod, container, containers[(pod, container)],
                                              window=window, end=end)
            body += lines
            abnormal += [f"ABNORMAL {pod}/{container}: {f}" for f in findings]
        lines, findings = _network_lines(pod, network.get(pod))
        body += lines
        abnormal += [f"ABNORMAL {pod}: {f}" for f in findings]
    if not abnormal:
        abnormal = [f"nothing abnormal: throttling under {share(THROTTLED)}, memory under "
                    f"{share(MEMORY_NEAR)} of its limits and not on course to reach them within the "
                    f"hour, no restarts in the window"]
    return "\n".join([head] + abnormal + body)
