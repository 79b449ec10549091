"""kubectl JSON -> compact text for a model: the pod list (`get_pods`) and a pod's line.

get_pods says each thing once. A pod that is not healthy or has restarted gets its own line
(unhealthy first); of pods of one owner in the same state the first says the state and the
others "(state as above)", and a message never repeats the pod or container its line names (the
kubelet's back-off message carries both; its plain "back-off 5m0s restarting failed" says no
more than CrashLoopBackOff and is left out). Healthy pods (Running with every container ready and
no restarts, or Succeeded) are counted by owner, one line each, with the youngest age first
and naming them (with their own ages when those differ) only when few:

    pods in namespace prod: 5 total, 2 not healthy (listed first)
    checkout-6f8d-x7k2p phase=Running ready=0/1 restarts=47 container=checkout state=waiting ...
    checkout-6f8d-m4q9z phase=Running ready=0/1 restarts=45 (state as above) node=node-c age=4h
    healthy (Running, all containers ready, no restarts):
    frontend-74b9: 3 pods age=6d nodes=node-a,node-b,node-c: frontend-74b9-{7wlqb,d4t6m,lzbqm}

describe_pod's digest is pod_detail.py; events are events.py; the shared text helpers text.py.
"""

import re
from collections import Counter
from datetime import datetime, timezone

from mcp_kubectl_server.digests.text import age, kv, one_line

POD_LINES_MAX = 200
POD_BYTES_MAX = 16 * 1024
NAMES_MAX = 3   # a healthy owner's pods are named up to this many, else only counted
NODES_MAX = 3   # likewise the nodes they run on
SETTLED = {"Running": "healthy (Running, all containers ready, no restarts):",
           "Succeeded": "completed (Succeeded):"}
# The kubelet's message for a container in CrashLoopBackOff says no more than that reason does.
ROUTINE_BACK_OFF = re.compile(r"back-off \S+ restarting failed")


def state_words(state):
    """A container state dict -> (kind, reason, message, exit_code)."""
    for kind in ("waiting", "terminated", "running"):
        if kind in (state or {}):
            detail = state[kind] or {}
            return kind, detail.get("reason", ""), detail.get("message", ""), detail.get("exitCode")
    return "", "", "", None


def _pick_container(statuses):
    """The container whose state best explains a problem (waiting/terminated, then not ready)."""
    for status in statuses:
        if state_words(status.get("state"))[0] in ("waiting", "terminated"):
            return status
    for status in statuses:
        if not status.get("ready"):
            return status
    return None


def init_status(pod):
    """`Init:CrashLoopBackOff`, `Init:Error`, `Init:1/2` while init containers have not all
    finished (kubectl's STATUS column), else None."""
    status = pod.get("status") or {}
    total = len((pod.get("spec") or {}).get("initContainers") or [])
    for index, cs in enumerate(status.get("initContainerStatuses") or []):
        kind, reason, _, code = state_words(cs.get("state"))
        if kind == "terminated" and code == 0:
            continue
        if kind == "terminated":
            return "Init:" + (reason or f"ExitCode:{code}")
        if kind == "waiting" and reason and reason != "PodInitializing":
            return "Init:" + reason
        return f"Init:{index}/{total}"
    return None


def pod_is_healthy(pod):
    status = pod.get("status") or {}
    phase = status.get("phase", "Unknown")
    if phase == "Succeeded":
        return True
    statuses = status.get("containerStatuses") or []
    wanted = len((pod.get("spec") or {}).get("containers") or [])
    return (phase == "Running" and not (pod.get("metadata") or {}).get("deletionTimestamp")
            and len(statuses) >= wanted and all(s.get("ready") for s in statuses))


def unsaid(message, pod_name, container):
    """`message` without what its line already says: ` pod=NAME...` (the kubelet adds the pod's
    namespace and uid) and ` container=NAME`."""
    message = re.sub(r"\s*\bpod=" + re.escape(pod_name) + r"\S*", "", message or "")
    return re.sub(r"\s*\bcontainer=" + re.escape(container) + r"(?=\s|$)", "", message).strip()


def _problem_words(pod):
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    unfinished = [s for s in status.get("initContainerStatuses") or []  # a finished init container explains nothing
                  if state_words(s.get("state"))[::3] != ("terminated", 0)]
    picked = _pick_container(unfinished + statuses)
    words = kv("status_reason", status.get("reason")) + kv("status_message", status.get("message"), quote=200)
    inits = {s.get("name") for s in status.get("initContainerStatuses") or []}
    if picked is not None:
        kind, reason, message, code = state_words(picked.get("state"))
        label = "init_container" if picked.get("name") in inits else "container"
        words.append(f"{label}={picked.get('name', '?')} state={kind or 'unknown'}")
        message = unsaid(message, (pod.get("metadata") or {}).get("name", "?"), picked.get("name", "?"))
        message = "" if ROUTINE_BACK_OFF.fullmatch(message) else message
        words += kv("reason", reason) + kv("exit_code", code) + kv("message", message, quote=160, keep_end=True)
    elif not status.get("reason"):
        for cond in status.get("conditions") or []:
            if cond.get("status") == "False" and cond.get("reason"):
                words += [f"condition={cond.get('type')}"] + kv("reason", cond["reason"])
                words += kv("message", cond.get("message"), quote=160)
                break
    last = picked or max(statuses, key=lambda s: s.get("restartCount", 0), default=None)
    kind, reason, _, code = state_words((last or {}).get("lastState"))
    if kind == "terminated":
        words.append(f"last_state=terminated last_reason={reason or 'unknown'} last_exit_code={code}")
    return words


def pod_line(pod, now):
    """One line per pod: name, phase, ready x/y, restarts, current and last state, node, age."""
    return " ".join(pod_words(pod, now))


def pod_words(pod, now):
    """(head, state, tail) of a pod's line: name, phase, init, ready and restarts; the current
    and last state (only for a pod that is not healthy or restarted); node and age."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    phase = "Terminating" if meta.get("deletionTimestamp") else status.get("phase", "Unknown")
    ready = sum(1 for s in statuses if s.get("ready"))
    total = len((pod.get("spec") or {}).get("containers") or []) or len(statuses)
    init = init_status(pod)
    restarts = sum(s.get("restartCount", 0) for s in statuses + (status.get("initContainerStatuses") or []))
    head = [meta.get("name", "?"), f"phase={phase}"] + kv("init", init)
    head += [f"ready={ready}/{total}", f"restarts={restarts}"]
    state = _problem_words(pod) if not pod_is_healthy(pod) or restarts else []
    node = (pod.get("spec") or {}).get("nodeName") or "none"
    tail = [f"node={node}", f"age={age(meta.get('creationTimestamp'), now)}"]
    # a newline in any field must not start a fake line
    return tuple(one_line(" ".join(map(str, part)), 1000) for part in (head, state, tail))


def _label_hint(pods):
    counts = Counter()
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        for key in ("app", "app.kubernetes.io/name", "k8s-app"):
            if key in labels:
                counts[f"{key}={labels[key]}"] += 1
                break
    return ", ".join(f"{sel} ({n} pods)" for sel, n in counts.most_common(8))


def owner(pod):
    """The name of the object that made the pod (its controller), or None for a bare pod."""
    refs = [r for r in (pod.get("metadata") or {}).get("ownerReferences") or [] if isinstance(r, dict)]
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    return ref.get("name") if ref else None


def _settled(pod):
    """The phase of a pod get_pods counts instead of listing (no restarts, healthy), or None."""
    status = pod.get("status") or {}
    statuses = (status.get("containerStatuses") or []) + (status.get("initContainerStatuses") or [])
    if not pod_is_healthy(pod) or any(s.get("restartCount") for s in statuses):
        return None
    return (pod.get("status") or {}).get("phase")


def _listed_order(pod):
    """Unhealthy first; by owner; of one owner the pods in one state together, the most
    restarted first."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return (pod_is_healthy(pod), owner(pod) or "", _problem_words(pod),
            -sum(s.get("restartCount", 0) for s in statuses), (pod.get("metadata") or {}).get("name", ""))


def _listed_lines(pods, now):
    """[(line, [pod])]: a line per pod, the state said once for consecutive pods of one owner."""
    lines, before = [], None
    for pod in pods:
        head, state, tail = pod_words(pod, now)
        same = state and (owner(pod), state) == before
        lines.append((" ".join(w for w in (head, "(state as above)" if same else state, tail) if w),
                      [pod]))
        before = (owner(pod), state)
    return lines


def _counted_lines(pods, now):
    """[(line, pods)]: a line per owner (and phase) of settled pods, with count, ages, nodes and
    names when few, under a line that says what they share."""
    groups = {}
    for pod in pods:
        groups.setdefault((_settled(pod), owner(pod) or "(no owner)"), []).append(pod)
    lines, phases = [], set()
    for (phase, name), group in sorted(groups.items()):
        if phase not in phases:
            phases.add(phase)
            lines.append((SETTLED.get(phase, f"{phase}:"), []))
        # youngest first: a pod that just replaced another shows at the head of the range
        made = sorted(((p.get("metadata") or {}).get("creationTimestamp") or "",
                       (p.get("metadata") or {}).get("name", "?")) for p in group)[::-1]
        ages = {pod: age(created, now) for created, pod in made}
        spread = list(dict.fromkeys(ages.values()))
        nodes = sorted({(p.get("spec") or {}).get("nodeName") or "none" for p in group})
        words = [f"{name}: {len(group)} pod{'s' * (len(group) > 1)}",
                 f"age={spread[0]}" if len(spread) == 1 else f"ages={spread[0]}..{spread[-1]}",
                 f"nodes={','.join(nodes)}" if len(nodes) <= NODES_MAX else f"nodes={len(nodes)}"]
        line = " ".join(words) + (": " + _names(name, ages, len(spread) == 1) if len(ages) <= NAMES_MAX else "")
        lines.append((one_line(line, 1000), group))
    return lines


def _names(owner_name, ages, same_age):
    """The pods' names: `OWNER-{a,b}` (as a shell expands it) when they share their owner's name
    and age, else each whole (with its age when ages differ)."""
    names = sorted(ages)
    if same_age and len(names) > 1 and all(n.startswith(owner_name + "-") for n in names):
        return f"{owner_name}-{{{','.join(n[len(owner_name) + 1:] for n in names)}}}"
    return " ".join(pod if same_age else f"{pod}({ages[pod]})" for pod in names)


def pods_digest(pod_list, *, namespace, selector=None, now=None):
    """`kubectl get pods -o json` -> header, the pods not healthy (first) or restarted one line
    each, the others counted by owner; bounded."""
    now = now or datetime.now(timezone.utc)
    pods = [p for p in (pod_list.get("items") or []) if isinstance(p, dict)]
    scope = f"namespace {namespace}" + (f" with selector {selector}" if selector else "")
    if not pods:
        return f"no pods in {scope}"
    listed = sorted((p for p in pods if _settled(p) is None), key=_listed_order)
    entries = _listed_lines(listed, now) + _counted_lines([p for p in pods if _settled(p)], now)
    sick = sum(1 for p in pods if not pod_is_healthy(p))
    lines = [f"pods in {scope}: {len(pods)} total, {sick} not healthy" + (" (listed first)" if sick else "")]
    size = len(lines[0]) + 1
    for shown, (line, _) in enumerate(entries):
        if len(lines) >= POD_LINES_MAX - 2 or size + len(line) + 1 > POD_BYTES_MAX - 1200:
            hidden = [p for _, group in entries[shown:] for p in group]
            hidden_sick = sum(1 for p in hidden if not pod_is_healthy(p))
            lines.append(f"not shown: {len(hidden)} more pods ({hidden_sick} not healthy); narrow the "
                         "query with a label selector, e.g. selector=app=NAME")
            hint = _label_hint(pods)
            if hint:
                lines.append(one_line("labels to narrow by: " + hint, 1000))
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)
