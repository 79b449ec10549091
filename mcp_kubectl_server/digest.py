"""kubectl JSON -> compact text for a model: pod lists, events and logs (describe_pod: describe.py).

Every digest is line-oriented with one fact per line and stable `key=value` wording, so a reader
(model or human) can quote a line as evidence and grep for it. Values that come from the cluster
are squeezed onto one line and redacted before they are cut (a cut JWT or key would no longer look
like one); the whole result is redacted again on its way out (server.py).
"""

import re
from collections import Counter
from datetime import datetime, timezone

from .redact import redact

POD_LINES_MAX = 200
POD_BYTES_MAX = 16 * 1024
EVENTS_MAX = 25
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def one_line(text, limit=200):
    """Redact, collapse whitespace, drop control characters, then cut to `limit` characters."""
    text = " ".join(_CONTROL.sub(" ", redact(str(text))).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def quoted(text, limit=200):
    return '"' + one_line(text, limit).replace('"', "'") + '"'


def kv(key, value, *, quote=0):
    """[`key=value`] when there is a value (0 counts), else []; quote=N quotes and cuts to N chars."""
    if value is None or value == "":
        return []
    return [f"{key}={quoted(value, quote) if quote else value}"]


def parse_time(value):
    """RFC 3339 timestamp (with or without fraction) -> aware datetime, or None."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    text = re.sub(r"\.(\d+)", lambda m: "." + (m.group(1) + "000000")[:6], text)  # 3.10 wants 3 or 6
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def format_time(moment):
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if moment else "time=unknown"


def age(created, now):
    """kubectl-style age: 45s, 12m, 3h5m, 2d4h."""
    moment = parse_time(created)
    if moment is None:
        return "unknown"
    seconds = max(0, int((now - moment).total_seconds()))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours and days < 10 else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    return f"{minutes}m" if minutes else f"{seconds}s"


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
        words += kv("reason", reason) + kv("exit_code", code) + kv("message", message, quote=160)
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


def event_time(event):
    """The best timestamp an event has; None when it has none."""
    meta = event.get("metadata") or {}
    series = event.get("series") or {}
    for value in (series.get("lastObservedTime"), event.get("lastTimestamp"), event.get("eventTime"),
                  event.get("firstTimestamp"), meta.get("creationTimestamp")):
        moment = parse_time(value)
        if moment is not None:
            return moment
    return None


def event_line(event, now=None):
    """One event: time, type, reason, kind/name, count, (age when `now` is given), message."""
    obj = event.get("involvedObject") or event.get("regarding") or {}
    count = (event.get("series") or {}).get("count") or event.get("count") or 1
    moment = event_time(event)
    seen = [f"age={age(format_time(moment), now) if moment else 'unknown'}"] if now else []
    return one_line(" ".join(map(str, [format_time(moment), event.get("type") or "Normal",
                                       event.get("reason") or "NoReason",
                                       f"{obj.get('kind', '?')}/{obj.get('name', '?')}", *seen, f"count={count}:",
                                       one_line(event.get("message") or event.get("note") or "", 300)])), 1000)


def sorted_events(events):
    """Oldest first; events without any timestamp first, in their listed order."""
    floor = datetime.min.replace(tzinfo=timezone.utc)
    indexed = list(enumerate(e for e in events if isinstance(e, dict)))
    indexed.sort(key=lambda pair: (event_time(pair[1]) or floor, pair[0]))
    return [e for _, e in indexed]


EVENT_KINDS = ("Pod", "ReplicaSet", "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob",
               "HorizontalPodAutoscaler", "Service", "Endpoints", "EndpointSlice", "PersistentVolumeClaim",
               "ConfigMap", "ResourceQuota", "Node", "Namespace")


def _event_matches(event, *, name, type_, kind):
    obj = event.get("involvedObject") or event.get("regarding") or {}
    return ((not name or obj.get("name") == name) and (not kind or obj.get("kind") == kind)
            and (not type_ or (event.get("type") or "Normal") == type_))


def events_digest(event_list, *, namespace, name=None, type_=None, kind=None, limit=EVENTS_MAX, now=None):
    """`kubectl get events -o json` -> the last `limit` matching events, chronological, with ages.

    The filters are applied here too: a server that ignores a field selector must not widen them."""
    now = now or datetime.now(timezone.utc)
    every = [e for e in event_list.get("items") or [] if isinstance(e, dict)]
    events = sorted_events([e for e in every if _event_matches(e, name=name, type_=type_, kind=kind)])
    filters = [f for f in (type_, kind, name and f"about {name}") if f]
    scope = f"namespace {namespace}" + (f" ({', '.join(filters)})" if filters else "")
    if not events:
        return f"no events in {scope} (the cluster keeps events for about an hour)"
    shown = events[-limit:]
    head = f"events in {scope}: {len(events)} total" + (
        f", showing the last {len(shown)} (more exist: narrow with type, involved_kind or name)"
        if len(shown) < len(events) else "") + ", oldest first"
    return "\n".join([head] + [event_line(e, now) for e in shown])


def clean_log_text(text):
    """Strip terminal escapes and control characters a container may have written."""
    return _CONTROL.sub("?", _ANSI.sub("", text.replace("\r\n", "\n")))
