"""get_priority_classes digest: the cluster's PriorityClasses, highest value first.

    priority classes: 4 (global default: batch-low, value 1000; pods without a class get it)
    system-node-critical value=2000001000 preemption=PreemptLowerPriority (built in)
    batch-low value=1000 global-default preemption=PreemptLowerPriority
    best-effort value=-10 preemption=Never "for jobs that may wait"

A class with globalDefault gives its value to every new pod that names no class, so a default
set high makes ordinary pods preempt others; two defaults are said as such (the API server
takes the smaller value). PriorityClasses belong to no namespace, and none of them names a pod.
"""

from mcp_kubectl_server.digests.text import one_line

CLASSES_MAX = 60
BUILT_IN = ("system-node-critical", "system-cluster-critical")
DEFAULT_POLICY = "PreemptLowerPriority"  # what an unset preemptionPolicy means


def _value(pc):
    value = pc.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def class_line(pc):
    """One PriorityClass in one line."""
    name = (pc.get("metadata") or {}).get("name", "?")
    line = f"{name} value={_value(pc)}"
    if pc.get("globalDefault") is True:
        line += " global-default"
    line += f" preemption={pc.get('preemptionPolicy') or DEFAULT_POLICY}"
    if name in BUILT_IN:
        line += " (built in)"
    if pc.get("description"):
        line += " " + '"' + one_line(pc["description"], 120).replace('"', "'") + '"'
    return line


def priority_classes_digest(class_list):
    """The get_priority_classes text from the API list (a dict with `items`)."""
    classes = sorted(class_list.get("items") or [], key=lambda pc: (-_value(pc),
                                                                   (pc.get("metadata") or {}).get("name", "")))
    if not classes:
        return ("no PriorityClasses in the cluster: every pod has priority 0 unless it names a class,"
                " and no pod preempts another")
    defaults = [pc for pc in classes if pc.get("globalDefault") is True]
    if not defaults:
        head = "no global default: pods that name no class get priority 0"
    else:
        low = min(defaults, key=_value)
        head = (f"global default: {low['metadata'].get('name', '?')}, value {_value(low)}; pods that name"
                " no class get it")
        if len(defaults) > 1:
            head += (f" ({len(defaults)} classes are marked globalDefault: the smallest value wins: "
                     + ", ".join(pc["metadata"].get("name", "?") for pc in defaults) + ")")
        if _value(low) > 0 and (low.get("preemptionPolicy") or DEFAULT_POLICY) == DEFAULT_POLICY:
            head += "; such pods may preempt (evict) pods of lower priority to be scheduled"
    lines = [f"priority classes: {len(classes)} ({head})"]
    lines += [class_line(pc) for pc in classes[:CLASSES_MAX]]
    if len(classes) > CLASSES_MAX:
        lines.append(f"... {len(classes) - CLASSES_MAX} more PriorityClasses not shown")
    return "\n".join(lines)
