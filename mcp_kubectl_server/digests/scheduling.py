"""A pod's scheduling constraints in words, and for a Pending pod which one no node satisfies.

`constraint_lines(spec, status)` says what a pod (or a pod template) asks of the scheduler:
node selector, node affinity (required terms ORed, preferred with weights), pod affinity and
anti-affinity, tolerations, topology spread, priority class (value, preemption policy), and the node it got or why not.
`unplaced_line(pod, nodes)` replays the three filters that depend only on the nodes, in the
scheduler's order (node unschedulable, untolerated taints, node selector and required node
affinity), and names the constraint no node passes, or says that these pass and the reason
lies elsewhere (resources, pod affinity, spread, volumes), which only the scheduler's message tells.
"""

from mcp_kubectl_server.digests.selectors import requirement_matches, requirement_text, selector_text

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def _term_text(term):
    parts = [requirement_text(r) for r in term.get("matchExpressions") or []]
    parts += [f"field {requirement_text(r)}" for r in term.get("matchFields") or []]
    return ",".join(parts) or "(empty term)"


def _pod_term_text(term):
    namespaces = term.get("namespaces") or []
    where = f" in namespaces {','.join(namespaces)}" if namespaces else ""
    if term.get("namespaceSelector") is not None:
        where = f" in namespaces {selector_text(term['namespaceSelector'], empty='(all)')}"
    return (f"pods {selector_text(term.get('labelSelector'), empty='(all)')}{where} "
            f"per {term.get('topologyKey', '?')}")


def toleration_text(tol):
    """kubectl's spelling: key=value:Effect, op=Exists when it matches any value, for Ns."""
    text = (tol.get("key") or "") + (f"={tol['value']}" if tol.get("value") else "")
    text += f":{tol['effect']}" if tol.get("effect") else ""
    if tol.get("operator") == "Exists":
        text += " op=Exists" if text else "op=Exists (every taint)"
    if tol.get("tolerationSeconds") is not None:
        text += f" for {tol['tolerationSeconds']}s"
    return text


def taint_text(taint):
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key', '?')}{value}:{taint.get('effect', '?')}"


def _affinity_lines(affinity):
    lines = []
    node = affinity.get("nodeAffinity") or {}
    required = (node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    if required:
        lines.append("node affinity required (any one term): " + " | ".join(_term_text(t) for t in required))
    for pref in node.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
        lines.append(f"node affinity preferred (weight {pref.get('weight', '?')}): "
                     + _term_text(pref.get("preference") or {}))
    for kind, word in (("podAffinity", "pod affinity"), ("podAntiAffinity", "pod anti-affinity")):
        block = affinity.get(kind) or {}
        for term in block.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            lines.append(f"{word} required: {_pod_term_text(term)}")
        for pref in block.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
            lines.append(f"{word} preferred (weight {pref.get('weight', '?')}): "
                         + _pod_term_text(pref.get("podAffinityTerm") or {}))
    return lines


def constraint_lines(spec, status=None):
    """The scheduling lines of a pod spec (a template's spec too; `status` only for a pod)."""
    selector = spec.get("nodeSelector") or {}
    lines = ["node selector: " + (",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "none")]
    lines += _affinity_lines(spec.get("affinity") or {})
    tolerations = spec.get("tolerations") or []
    lines.append("tolerations: " + (", ".join(toleration_text(t) for t in tolerations) or "none"))
    for c in spec.get("topologySpreadConstraints") or []:
        lines.append(f"topology spread: {c.get('topologyKey', '?')}:"
                     f"{c.get('whenUnsatisfiable', 'DoNotSchedule')} when max skew {c.get('maxSkew', '?')}"
                     f" is exceeded for selector {selector_text(c.get('labelSelector'), empty='<none>')}")
    words = [f"priority {spec['priority']}"] if spec.get("priority") is not None else []
    words += [f"preemption policy {spec['preemptionPolicy']}"] if spec.get("preemptionPolicy") else []
    lines.append(f"priority class: {spec.get('priorityClassName') or 'none'}"
                 + (f" ({', '.join(words)})" if words else ""))
    if status is not None:
        lines.append(_placement_line(spec, status))
    return lines


def _placement_line(spec, status):
    if spec.get("nodeName"):
        return f"assigned node: {spec['nodeName']}"
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return f"assigned node: none (PodScheduled=False reason={cond.get('reason') or 'unknown'})"
    return "assigned node: none yet"


def tolerates(tolerations, taint):
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if (tol.get("operator") or "Equal") == "Exists":
            if not tol.get("key") or tol["key"] == taint.get("key"):
                return True
        elif tol.get("key") == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _node_fields(node):
    return {"metadata.name": (node.get("metadata") or {}).get("name", "")}


def affinity_matches(spec, node):
    """nodeSelector and required node affinity (terms ORed, requirements ANDed) against a node."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    if not required:
        return True
    return any(all(requirement_matches(r, labels) for r in t.get("matchExpressions") or [])
               and all(requirement_matches(r, _node_fields(node)) for r in t.get("matchFields") or [])
               and (t.get("matchExpressions") or t.get("matchFields")) for t in required)


def node_verdict(spec, node):
    """The first node-only filter this node fails for the pod ('' when it passes them all)."""
    if (node.get("spec") or {}).get("unschedulable"):
        return "unschedulable (cordoned)"
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") in BLOCKING_EFFECTS and not tolerates(spec.get("tolerations") or [], taint):
            return f"untolerated taint {taint_text(taint)}"
    if not affinity_matches(spec, node):
        return "node selector/affinity"
    return ""


def _label_values(spec, nodes):
    """'kubernetes.io/hostname on the nodes: node-a, node-b' for each key the pod selects on."""
    keys = list(spec.get("nodeSelector") or {})
    for term in (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                 .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []:
        keys += [r.get("key") for r in term.get("matchExpressions") or [] if r.get("key") not in keys]
    words = []
    for key in keys:
        values = sorted({((nd.get("metadata") or {}).get("labels") or {}).get(key) for nd in nodes} - {None})
        words.append(f"{key} on the nodes: " + (", ".join(values[:8]) or "no node has this label")
                     + (" ..." if len(values) > 8 else ""))
    return "; ".join(words)


def _wanted(spec):
    selector = spec.get("nodeSelector") or {}
    parts = [f"node selector {','.join(f'{k}={v}' for k, v in sorted(selector.items()))}"] if selector else []
    terms = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    if terms:
        parts.append("required node affinity " + " | ".join(_term_text(t) for t in terms))
    return " and ".join(parts)


def unplaced_line(pod, nodes):
    """For a pod the scheduler has not placed: which node-side constraint no node satisfies, or
    that those all pass on some node; None for a placed pod."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    if spec.get("nodeName") or status.get("phase") not in (None, "Pending"):
        return None
    if not nodes:
        return "why not placed: the cluster has no node at all"
    verdicts = {(nd.get("metadata") or {}).get("name", "?"): node_verdict(spec, nd) for nd in nodes}
    passing = [name for name, verdict in verdicts.items() if not verdict]
    total = len(nodes)
    if passing:
        return (f"why not placed: node selector, node affinity and taints allow {len(passing)} of {total} "
                f"nodes ({', '.join(passing[:8])}); the cause is elsewhere (resources, pod affinity, "
                "topology spread, volumes, ports): see the scheduler's FailedScheduling message")
    groups = {}
    for name, verdict in verdicts.items():
        groups.setdefault(verdict, []).append(name)
    if list(groups) == ["node selector/affinity"]:
        return (f"why not placed: no node satisfies the {_wanted(spec)}: 0 of {total} nodes match "
                f"({_label_values(spec, nodes)})")
    parts = []
    for verdict, names in sorted(groups.items(), key=lambda g: -len(g[1])):
        one = len(names) == 1
        if verdict == "node selector/affinity":
            what = f"{'does' if one else 'do'} not match the {_wanted(spec)}"
        elif verdict.startswith("unschedulable"):
            what = f"{'is' if one else 'are'} cordoned"
        else:
            what = f"{'has' if one else 'have'} {verdict}"
        shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
        parts.append(f"{len(names)} node{'' if one else 's'} {what} ({shown})")
    return "why not placed: no node passes every constraint: " + "; ".join(parts)


def pod_lines(pod, nodes, *, nodes_error=None):
    """describe_pod's `scheduling` lines: the constraints, the placement, and for a pod not yet
    placed the why-not line (`nodes` None with `nodes_error` when they could not be read)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    lines = ["scheduling " + line for line in constraint_lines(spec, status)]
    if nodes is None and nodes_error and not spec.get("nodeName") and status.get("phase") == "Pending":
        lines.append(f"scheduling why not placed: the nodes could not be read ({nodes_error})")
    elif nodes is not None:
        why = unplaced_line(pod, nodes)
        if why:
            lines.append("scheduling " + why)
    return lines


def _keyed(lines):
    keyed = {}
    for line in lines:
        key, _, value = line.partition(": ")
        keyed[key] = f"{keyed[key]}; {value}" if key in keyed else value
    return keyed


def constraint_changes(old_spec, new_spec):
    """`scheduling KEY: OLD -> NEW` for each constraint two pod templates disagree on."""
    old, new = _keyed(constraint_lines(old_spec or {})), _keyed(constraint_lines(new_spec or {}))
    return [f"scheduling {key}: {old.get(key, 'none')} -> {new.get(key, 'none')}"
            for key in dict.fromkeys([*old, *new]) if old.get(key) != new.get(key)]
