"""Events -> text: one line per event, oldest first, and `get_events`' digest with its filters."""

import re
from datetime import datetime, timezone

from mcp_kubectl_server.digests.text import age, format_time, one_line, parse_time

EVENTS_MAX = 25


EVENT_MESSAGE_CHARS = 600  # cut from the middle: a kubelet's pull error says why at its end


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


def event_line(event, now=None, *, pod=None):
    """One event: time, type, reason, kind/name, count, (age when `now` is given), message. An
    event about `pod` (describe_pod's own) leaves out its kind/name and the kubelet's
    ` in pod NAME_NAMESPACE(UID)`: the line is about that pod already."""
    obj = event.get("involvedObject") or event.get("regarding") or {}
    count = (event.get("series") or {}).get("count") or event.get("count") or 1
    moment = event_time(event)
    seen = [f"age={age(format_time(moment), now) if moment else 'unknown'}"] if now else []
    message = event.get("message") or event.get("note") or ""
    itself = pod is not None and (obj.get("kind"), obj.get("name")) == ("Pod", pod)
    if itself:
        message = re.sub(r"\s*\bin pod " + re.escape(pod) + r"_\S*", "", str(message))
    about = [] if itself else [f"{obj.get('kind', '?')}/{obj.get('name', '?')}"]
    return one_line(" ".join(map(str, [format_time(moment), event.get("type") or "Normal",
                                       event.get("reason") or "NoReason", *about, *seen,
                                       f"count={count}:",
                                       one_line(message, EVENT_MESSAGE_CHARS, keep_end=True)])),
                    1000, keep_end=True)


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
