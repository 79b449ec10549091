"""A PersistentVolume's node affinity, and the pods that can never run where their volume is.

A PersistentVolume may say on which nodes it can be used (`spec.nodeAffinity.required`, a node
selector: terms ORed, each term's requirements ANDed; local volumes and zonal disks carry one).
The scheduler places a pod that mounts the claim only on a node that satisfies both the volume's
affinity and the pod's own node constraints; when no node does, the pod stays Pending with
"N node(s) had volume node affinity conflict". `conflict_line` replays that with the nodes:

    volume pv-ledger-a node affinity: kubernetes.io/hostname in (node-a) (nodes: node-a)
      problem: pod ledger-0 cannot run on any node the volume allows: node-a: node selector/affinity ...
"""

from mcp_kubectl_server.digests.scheduling import _term_text, _wanted, affinity_matches, node_verdict


def node_summary(node):
    """The parts of a Node the placement checks read (labels, taints, unschedulable)."""
    md, spec = node.get("metadata") or {}, node.get("spec") or {}
    return {"metadata": {"name": md.get("name", "?"), "labels": md.get("labels") or {}},
            "spec": {"taints": spec.get("taints") or [], "unschedulable": spec.get("unschedulable")}}


def _required_terms(pv):
    return ((((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {})
            .get("nodeSelectorTerms") or [])


def affinity_text(pv):
    """The volume's required node affinity in words, or None when it has none."""
    terms = _required_terms(pv)
    return " | ".join(_term_text(t) for t in terms) if terms else None


def allowed_nodes(pv, nodes):
    """The names of the nodes the volume's node affinity allows (every node when it has none)."""
    terms = _required_terms(pv)
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": terms}}}} if terms else {}
    return [(n.get("metadata") or {}).get("name", "?") for n in nodes if affinity_matches(spec, n)]


def affinity_line(pv, nodes):
    """`node affinity: TERMS (nodes: a, b)`; nodes None when they could not be read."""
    text = affinity_text(pv)
    if text is None:
        return "node affinity: none (usable on every node)"
    if nodes is None:
        return f"node affinity: {text}"
    names = allowed_nodes(pv, nodes)
    return f"node affinity: {text} (nodes: {', '.join(names[:8]) or 'none of the cluster nodes'})"


def conflict_line(pv, pod, nodes):
    """A problem sentence when `pod` can run on none of the nodes `pv` allows, else None.

    `pod` needs spec nodeName, nodeSelector, affinity and tolerations; nodes their labels,
    taints and unschedulable flag."""
    spec = pod.get("spec") or {}
    name = (pod.get("metadata") or {}).get("name", "?")
    if spec.get("nodeName") or affinity_text(pv) is None:
        return None  # placed: the scheduler found a node both allow
    allowed = allowed_nodes(pv, nodes)
    volume = (pv.get("metadata") or {}).get("name", "?")
    if not allowed:
        return (f"volume {volume} allows no node of the cluster ({affinity_text(pv)}), so pod {name} "
                "can never be scheduled: the scheduler says volume node affinity conflict")
    by_name = {(n.get("metadata") or {}).get("name"): n for n in nodes}
    refusals = {node: node_verdict(spec, by_name[node]) for node in allowed}
    if any(not why for why in refusals.values()):
        return None
    why = "; ".join(f"{node} " + (f"does not match the pod's {_wanted(spec)}" if verdict == "node selector/affinity"
                                  else f"is refused: {verdict}") for node, verdict in list(refusals.items())[:5])
    return (f"pod {name} cannot run on any node volume {volume} allows ({', '.join(allowed[:5])}): {why}; "
            "the scheduler says volume node affinity conflict. Change the pod's node constraints, or move "
            "the data to a volume on a node the pod may use")
