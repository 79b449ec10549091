"""kubectl JSON -> compact text for a model: the pod list (`get_pods`) and one line per pod.

describe_pod's digest is pod_detail.py; events are events.py; the shared text helpers text.py.
"""

from collections import Counter
from datetime import datetime, timezone

from mcp_kubectl_server.digests.text import age, kv, one_line

POD_LINES_MAX = 200
POD_BYTES_MAX = 16 * 1024


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
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    phase = "Terminating" if meta.get("deletionTimestamp") else status.get("phase", "Unknown")
    ready = sum(1 for s in statuses if s.get("ready"))
    total = len((pod.get("spec") or {}).get("containers") or []) or len(statuses)
    init = init_status(pod)
    restarts = sum(s.get("restartCount", 0) for s in statuses + (status.get("initContainerStatuses") or []))
    words = [meta.get("name", "?"), f"phase={phase}"] + kv("init", init)
    words += [f"ready={ready}/{total}", f"restarts={restarts}"]
    if not pod_is_healthy(pod) or restarts:
        words += _problem_words(pod)
    node = (pod.get("spec") or {}).get("nodeName") or "none"
    words += [f"node={node}", f"age={age(meta.get('creationTimestamp'), now)}"]
    return one_line(" ".join(map(str, words)), 1000)  # a newline in any field must not start a fake line


def _label_hint(pods):
    counts = Counter()
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        for key in ("app", "app.kubernetes.io/name", "k8s-app"):
            if key in labels:
                counts[f"{key}={labels[key]}"] += 1
                break
    return ", ".join(f"{sel} ({n} pods)" for sel, n in counts.most_common(8))


def pods_digest(pod_list, *, namespace, selector=None, now=None):
    """`kubectl get pods -o json` -> header, one line per pod (unhealthy first), bounded."""
    now = now or datetime.now(timezone.utc)
    pods = [p for p in (pod_list.get("items") or []) if isinstance(p, dict)]
    scope = f"namespace {namespace}" + (f" with selector {selector}" if selector else "")
    if not pods:
        return f"no pods in {scope}"
    pods.sort(key=lambda p: (pod_is_healthy(p), (p.get("metadata") or {}).get("name", "")))
    sick = sum(1 for p in pods if not pod_is_healthy(p))
    lines = [f"pods in {scope}: {len(pods)} total, {sick} not healthy" + (" (listed first)" if sick else "")]
    size = len(lines[0]) + 1
    shown = 0
    for pod in pods:
        line = pod_line(pod, now)
        if len(lines) >= POD_LINES_MAX - 2 or size + len(line) + 1 > POD_BYTES_MAX - 1200:
            break
        lines.append(line)
        size += len(line) + 1
        shown += 1
    if shown < len(pods):
        hidden = pods[shown:]
        hidden_sick = sum(1 for p in hidden if not pod_is_healthy(p))
        lines.append(f"not shown: {len(hidden)} more pods ({hidden_sick} not healthy); narrow the query"
                     " with a label selector, e.g. selector=app=NAME")
        hint = _label_hint(pods)
        if hint:
            lines.append(one_line("labels to narrow by: " + hint, 1000))
    return "\n".join(lines)
