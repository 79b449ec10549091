"""get_storage: a namespace's PersistentVolumeClaims, who mounts them, and the StorageClasses.

Reads: claims, pods and Warning events of the namespace, the StorageClasses (cluster-scoped,
names and provisioners only) and, for each bound claim, its PersistentVolume by name (never a
list of every volume, which would name other namespaces' claims; a volume whose claimRef is not
this claim is only said to belong to another one). Digest, claims not Bound first:

    storage in prod: 2 claims (1 not Bound); storage classes: gp3 (default, ebs.csi.aws.com), ...
    ledger-data phase=Pending class=fast-ssd requested=20Gi access=RWO volume=none used-by=ledger-...
      problem: storage class fast-ssd does not exist (classes here: gp3, io2-archive); ...
      last warning: ProvisioningFailed (x142): storageclass.storage.k8s.io "fast-ssd" not found
    analytics-data phase=Bound class=local-storage ... volume=local-pv-node-a (volume phase=Bound reclaim=Retain) ...
      volume node affinity: kubernetes.io/hostname in (node-a) (nodes: node-a)
      problem: pod analytics-79d8c6b5f7-c2v8n cannot run on any node volume local-pv-node-a allows ...

The nodes are read only when a pod not yet placed mounts a claim whose volume has node affinity.
"""

from mcp_kubectl_server.digests.events import sorted_events
from mcp_kubectl_server.digests.text import one_line
from mcp_kubectl_server.digests.volume_nodes import affinity_line, affinity_text, conflict_line


CLAIMS_MAX = 100


DEFAULT_CLASS = ("storageclass.kubernetes.io/is-default-class",
                 "storageclass.beta.kubernetes.io/is-default-class")


MODES = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}


def is_default(sc):
    annotations = (sc.get("metadata") or {}).get("annotations") or {}
    return any(annotations.get(a) == "true" for a in DEFAULT_CLASS)


def classes_text(classes):
    return ", ".join(f"{c['metadata']['name']} ({'default, ' if is_default(c) else ''}"
                     f"{c.get('provisioner', '?')})" for c in classes) or "none"


def claim_users(pods):
    """{claim name: [pod names]} from pods' volumes (plain claims and generic ephemeral ones)."""
    users = {}
    for pod in pods:
        name = pod["metadata"]["name"]
        for vol in (pod.get("spec") or {}).get("volumes") or []:
            if (vol.get("persistentVolumeClaim") or {}).get("claimName"):
                users.setdefault(vol["persistentVolumeClaim"]["claimName"], []).append(name)
            elif "ephemeral" in vol:  # the claim of a generic ephemeral volume is POD-VOLUME
                users.setdefault(f"{name}-{vol.get('name', '')}", []).append(name)
    return users


def _class_problem(pvc, classes):
    """(problem or None, the class to show); classes is None when they could not be read."""
    spec = pvc.get("spec") or {}
    annotations = (pvc.get("metadata") or {}).get("annotations") or {}
    wanted = annotations.get("volume.beta.kubernetes.io/storage-class", spec.get("storageClassName"))
    if spec.get("volumeName") or classes is None:
        return None, wanted
    names = [c["metadata"]["name"] for c in classes]
    if wanted is None:
        defaults = [c["metadata"]["name"] for c in classes if is_default(c)]
        if not defaults:
            return ("the claim names no storage class and no default class exists, so nothing "
                    "will provision a volume for it"), None
        return None, f"{defaults[-1]} (default)"
    if wanted == "":
        return None, '"" (static binding only: waits for a matching PersistentVolume)'
    if wanted not in names:
        return (f"storage class {wanted} does not exist (classes here: {', '.join(names) or 'none'}); "
                "the claim stays Pending until that class exists or the claim names an existing one"), wanted
    return None, wanted


def volume_words(pv, *, namespace, claim):
    """The bound volume in a few words; a volume bound to another claim is not described."""
    if not isinstance(pv, dict):
        return str(pv)  # why it could not be read
    spec, status = pv.get("spec") or {}, pv.get("status") or {}
    ref = spec.get("claimRef") or {}
    if ref and (ref.get("namespace"), ref.get("name")) != (namespace, claim):
        return "volume is bound to another claim"  # whose: outside this tool's scope
    words = (f"volume phase={status.get('phase', '?')} "
             f"reclaim={spec.get('persistentVolumeReclaimPolicy', '?')}")
    return words + (f" reason={one_line(status['reason'], 100)}" if status.get("reason") else "")


def _volume_node_lines(pvc, pv, pods, nodes):
    """The bound volume's node affinity and, for each pod of `pods` that mounts the claim and can
    run on none of the nodes it allows, a problem line; nodes None: they were not read."""
    if not isinstance(pv, dict) or affinity_text(pv) is None:
        return [], False
    ref, md = (pv.get("spec") or {}).get("claimRef") or {}, pvc.get("metadata") or {}
    if ref and (ref.get("namespace"), ref.get("name")) != (md.get("namespace"), md.get("name")):
        return [], False  # another claim's volume: volume_words says so, and no more
    lines = ["  volume " + affinity_line(pv, nodes)]
    problems = [conflict_line(pv, pod, nodes) for pod in pods] if nodes is not None else []
    lines += [f"  problem: {p}" for p in problems if p]
    return lines, any(problems)


def claim_block(pvc, *, classes, users, volumes, warnings, pod_docs=None, nodes=None):
    """(problem: bool, lines) for one claim; `pod_docs` {name: pod} and `nodes` let it say when a pod
    can run on none of the nodes the claim's volume allows."""
    md, spec, status = pvc.get("metadata") or {}, pvc.get("spec") or {}, pvc.get("status") or {}
    name = md.get("name", "?")
    problem, cls = _class_problem(pvc, classes)
    modes = ",".join(MODES.get(m, m) for m in status.get("accessModes") or spec.get("accessModes") or [])
    line = (f"{name} phase={status.get('phase', 'Unknown')} class={cls if cls is not None else 'none'}"
            f" requested={((spec.get('resources') or {}).get('requests') or {}).get('storage', '?')}")
    if (status.get("capacity") or {}).get("storage"):
        line += f" capacity={status['capacity']['storage']}"
    line += f" access={modes or 'none'} volume={spec.get('volumeName') or 'none'}"
    if spec.get("volumeName") in volumes:
        line += f" ({volume_words(volumes[spec['volumeName']], namespace=md.get('namespace'), claim=name)})"
    pods = users.get(name, [])
    line += " used-by=" + (",".join(pods[:5]) + (" ..." if len(pods) > 5 else "") if pods else "none")
    lines = [line]
    if problem:
        lines.append(f"  problem: {problem}")
    mine = [(pod_docs or {})[p] for p in users.get(name, []) if p in (pod_docs or {})]
    more, conflict = _volume_node_lines(pvc, volumes.get(spec.get("volumeName")), mine, nodes)
    lines += more
    if name in warnings:
        ev = warnings[name]
        lines.append(f"  last warning: {ev.get('reason', '')} (x{ev.get('count') or 1}): "
                     f"{one_line(ev.get('message', ''), 300, keep_end=True)}")
    return bool(problem) or conflict or status.get("phase") != "Bound", lines


def storage_digest(claim_list, class_list, pod_list, *, namespace, volumes=None, events=None, nodes=None,
                   nodes_error=None):
    """The get_storage text. class_list: the API list, or why it is unreadable (a string);
    volumes: {name: PersistentVolume or why it is unreadable}; events: the API list; nodes: the
    cluster's nodes when a pod that mounts a node-pinned volume waits to be placed (else None,
    with nodes_error when they could not be read)."""
    claims = claim_list.get("items") or []
    classes = (class_list.get("items") or []) if isinstance(class_list, dict) else None
    warnings = {}
    for ev in sorted_events([e for e in (events or {}).get("items") or []
                             if e.get("type") == "Warning"
                             and (e.get("involvedObject") or {}).get("kind") == "PersistentVolumeClaim"]):
        warnings[ev["involvedObject"].get("name")] = ev  # oldest first: the last one wins
    users = claim_users(pod_list.get("items") or [])
    pods = {(p.get("metadata") or {}).get("name"): p for p in pod_list.get("items") or []}
    blocks = [claim_block(c, classes=classes, users=users, volumes=volumes or {}, warnings=warnings,
                          pod_docs=pods, nodes=nodes) for c in claims]
    blocks.sort(key=lambda b: not b[0])
    bad = sum(1 for b in blocks if b[0])
    shown = classes_text(classes) if classes is not None else (
        f"not readable ({class_list}), so a missing class cannot be told apart")
    lines = [f"storage in {namespace}: {len(claims)} claims ({bad} not Bound or with a problem); "
             f"storage classes: {shown}"]
    lines += [line for _, block in blocks[:CLAIMS_MAX] for line in block]
    if len(blocks) > CLAIMS_MAX:
        lines.append(f"... {len(blocks) - CLAIMS_MAX} more claims not shown")
    if not claims:
        lines.append(f"no PersistentVolumeClaims in namespace {namespace}")
    if nodes_error:
        lines.append(f"nodes not readable ({nodes_error}), so a volume's node affinity is not checked against "
                     "its pods' node constraints")
    return "\n".join(lines)
