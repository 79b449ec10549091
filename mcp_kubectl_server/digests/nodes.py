"""get_nodes and describe_node digests: Node JSON + the pods bound to each node -> lines.

Requested CPU and memory are summed from the pods' container requests (an init container counts
when it asks for more than the containers together, as the scheduler counts it); finished pods
(Succeeded, Failed) hold nothing. describe_node names only pods of the namespaces in scope: the
others are counted, never named, so a node tool cannot reach around the namespace allow-list.
"""

import re
from datetime import datetime, timezone

from mcp_kubectl_server.digests.events import event_line, sorted_events
from mcp_kubectl_server.digests.platform import platform_words
from mcp_kubectl_server.digests.pods import pod_line
from mcp_kubectl_server.digests.text import age, format_time, kv, one_line, parse_time

EVENTS_MAX = 15
PODS_MAX = 40
PRESSURES = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")
_SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


def quantity(text):
    """A Kubernetes quantity ('250m', '16374584Ki', '1.5Gi', '4') -> float, or None."""
    match = _QUANTITY.match(str(text).strip()) if text is not None else None
    if not match:
        return None
    try:
        return float(match.group(1)) * _SUFFIX[match.group(2) or ""]
    except ValueError:
        return None


def cpu_text(cores):
    return f"{round(cores * 1000)}m"


def mem_text(value):
    for unit, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value >= size:
            return f"{value / size:.1f}{unit}".replace(".0" + unit, unit)
    return f"{int(value)}"


def pod_requests(pod, part="requests"):
    """{'cpu': cores, 'memory': bytes} a pod asks for (max of init containers and the sum)."""
    spec = pod.get("spec") or {}
    total = {"cpu": 0.0, "memory": 0.0}
    def asked(container, res):
        return quantity(((container.get("resources") or {}).get(part) or {}).get(res)) or 0.0
    for container in spec.get("containers") or []:
        for res in total:
            total[res] += asked(container, res)
    for container in spec.get("initContainers") or []:
        for res in total:
            total[res] = max(total[res], asked(container, res))
    return total


def holds_resources(pod):
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def pods_by_node(pods):
    out = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and holds_resources(pod):
            out.setdefault(node, []).append(pod)
    return out


def _ready_words(node):
    conds = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
    ready = conds.get("Ready")
    words = [f"ready={ready.get('status', 'Unknown') if ready else 'Unknown'}"]
    if ready and ready.get("status") != "True":
        words += kv("reason", ready.get("reason")) + kv("message", ready.get("message"), quote=160)
    pressed = [t for t in PRESSURES if (conds.get(t) or {}).get("status") == "True"]
    words.append("pressure=" + (",".join(pressed) if pressed else "none"))
    return words


def _taints(node):
    return [f"{t.get('key', '?')}" + (f"={t['value']}" if t.get("value") else "") + f":{t.get('effect', '?')}"
            for t in (node.get("spec") or {}).get("taints") or []]


def _use_words(node, pods):
    alloc = (node.get("status") or {}).get("allocatable") or {}
    asked = {"cpu": 0.0, "memory": 0.0}
    for pod in pods:
        for res, value in pod_requests(pod).items():
            asked[res] += value
    words = []
    for res, fmt in (("cpu", cpu_text), ("memory", mem_text)):
        have = quantity(alloc.get(res))
        share = f"({round(100 * asked[res] / have)}%)" if have else ""
        words.append(f"{res}_requested={fmt(asked[res])}/{fmt(have) if have else '?'}{share}")
    words.append(f"pods={len(pods)}/{alloc.get('pods', '?')}")
    return words


def node_line(node, pods, now):
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    words = [meta.get("name", "?")] + _ready_words(node)
    words.append("taints=" + (",".join(_taints(node)) or "none"))
    words.append(f"schedulable={'no' if spec.get('unschedulable') else 'yes'}")
    words += _use_words(node, pods)
    words += platform_words(node) + [f"age={age(meta.get('creationTimestamp'), now)}"]
    return one_line(" ".join(words), 1000)


def node_is_healthy(node):
    conds = {c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or []}
    return (conds.get("Ready") == "True" and not any(conds.get(t) == "True" for t in PRESSURES)
            and not (node.get("spec") or {}).get("unschedulable"))


def nodes_digest(node_list, pod_list, *, now=None):
    """Nodes + every pod (all namespaces) -> one line per node, unhealthy first."""
    now = now or datetime.now(timezone.utc)
    nodes = [n for n in node_list.get("items") or [] if isinstance(n, dict)]
    if not nodes:
        return "no nodes in the cluster (or none visible to these credentials)"
    by_node = pods_by_node(p for p in pod_list.get("items") or [] if isinstance(p, dict))
    nodes.sort(key=lambda n: (node_is_healthy(n), (n.get("metadata") or {}).get("name", "")))
    sick = sum(1 for n in nodes if not node_is_healthy(n))
    head = f"nodes: {len(nodes)} total, {sick} not healthy" + (" (listed first)" if sick else "")
    return "\n".join([head] + [node_line(n, by_node.get((n.get("metadata") or {}).get("name"), []), now)
                               for n in nodes])


def _node_head(node, now):
    meta, spec, st = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    lines = [" ".join([f"node {meta.get('name', '?')}"] + _ready_words(node)
                      + [f"schedulable={'no' if spec.get('unschedulable') else 'yes'}",
                         *platform_words(node),
                         f"created={format_time(parse_time(meta.get('creationTimestamp')))}"])]
    for cond in st.get("conditions") or []:
        lines.append(" ".join([f"condition {cond.get('type', '?')}={cond.get('status', '?')}"]
                              + kv("reason", cond.get("reason"))
                              + [f"last_transition={format_time(parse_time(cond.get('lastTransitionTime')))}"
                                 f" ({age(cond.get('lastTransitionTime'), now)} ago)",
                                 f"last_heartbeat={format_time(parse_time(cond.get('lastHeartbeatTime')))}"]
                              + kv("message", cond.get("message"), quote=300)))
    lines += [f"taint {t}" for t in _taints(node)] or ["taint none"]
    for part in ("capacity", "allocatable"):
        values = st.get(part) or {}
        lines.append(f"{part} " + (" ".join(f"{k}={v}" for k, v in sorted(values.items())) or "unknown"))
    return lines


def _allocated(node, pods):
    alloc = (node.get("status") or {}).get("allocatable") or {}
    words = ["allocated"]
    for part in ("requests", "limits"):
        total = {"cpu": 0.0, "memory": 0.0}
        for pod in pods:
            for res, value in pod_requests(pod, part).items():
                total[res] += value
        for res, fmt in (("cpu", cpu_text), ("memory", mem_text)):
            have = quantity(alloc.get(res))
            share = f"({round(100 * total[res] / have)}%)" if have else ""
            words.append(f"{res}_{part}={fmt(total[res])}{share}")
    return " ".join(words)


def describe_node_digest(node, pod_list, events, *, allowed_namespaces, now=None):
    """One node in full; pods outside `allowed_namespaces` are only counted."""
    now = now or datetime.now(timezone.utc)
    name = (node.get("metadata") or {}).get("name", "?")
    pods = [p for p in pod_list.get("items") or [] if isinstance(p, dict)
            and (p.get("spec") or {}).get("nodeName") == name]
    holding = [p for p in pods if holds_resources(p)]
    lines = _node_head(node, now) + [_allocated(node, holding)]
    inside = [p for p in pods if (p.get("metadata") or {}).get("namespace") in allowed_namespaces]
    outside = len(pods) - len(inside)
    lines.append(f"pods on node: {len(pods)} ({len(inside)} in namespaces in scope: "
                 f"{', '.join(allowed_namespaces)}; {outside} in other namespaces, not named)")
    inside.sort(key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"].get("name", "")))
    for pod in inside[:PODS_MAX]:
        req = pod_requests(pod)
        lines.append(f"pod {pod['metadata'].get('namespace', '?')}/" + pod_line(pod, now)
                     + f" cpu_request={cpu_text(req['cpu'])} memory_request={mem_text(req['memory'])}")
    if len(inside) > PODS_MAX:
        lines.append(f"pod not shown: {len(inside) - PODS_MAX} more in scope")
    mine = [e for e in events if (e.get("involvedObject") or e.get("regarding") or {}).get("kind") == "Node"
            and (e.get("involvedObject") or e.get("regarding") or {}).get("name") == name]
    recent = sorted_events(mine)[-EVENTS_MAX:]
    lines += ["event " + event_line(e, now) for e in recent] or [
        "event none recorded for this node (events expire after about an hour)"]
    return "\n".join(one_line(ln, 1000) for ln in lines)
