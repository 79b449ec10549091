"""describe_pod digest: one pod's JSON (+ owner chain and events) -> one fact per line, each said once.

Lines start with a stable prefix (`pod`, `node`, `owner`, `labels`, `annotation`, `conditions`
(those with nothing to explain, on one line), `condition`, `service_account`, `image_pull_secrets`,
`dns`, `scheduling`, `defaults`, `init_container NAME ...`, `container NAME ...`, `volume`,
`events start-up`, `event`) so a reader can grep them. What would repeat another line is left
out: settings at their defaults are named together on the `defaults` line (pod_config.py); the
placement is the `node` line's; True conditions the node and container lines imply
(PodScheduled, Initialized, PodReadyToStartContainers); a label hash the owner's name carries;
`started=` when the pod started as it was created; the image's repository in `image_id` (its
digest by 12 hex digits, as crictl lists it); a message an event below carries (the condition or
state then names that event); the pod itself in its events, and its routine start-up events
(Scheduled, Pulling, Pulled, Created, Started) are counted on one line. The `scheduling` lines
(scheduling.py) say the pod's constraints and, for a pod not yet placed, which one no node
satisfies (the nodes are read only then).
Annotation values are cut short and, like everything, redacted on the way out. Environment
variables appear by NAME only: literal ones together on one line, never a value; a valueFrom
shows where the value comes from (secret/configmap name and key).
"""

import re

from mcp_kubectl_server.digests.events import EVENT_MESSAGE_CHARS, event_line, sorted_events
from mcp_kubectl_server.digests.pods import state_words, unsaid
from mcp_kubectl_server.digests.text import format_time, kv, one_line, parse_time, quoted
from mcp_kubectl_server.digests.pod_config import setting_lines

EVENTS_IN_DESCRIBE = 15
STATE_MESSAGE_CHARS = 1500  # the whole message, as a rule; cut from the middle only past this
LINE_CHARS = 2000


def probe_text(probe):
    """One probe as `http-get http://:8080/healthz delay=0s timeout=1s period=10s failure_threshold=3`."""
    if "httpGet" in probe:
        get = probe["httpGet"]
        how = f"http-get {get.get('scheme', 'HTTP').lower()}://:{get.get('port', '?')}{get.get('path', '/')}"
    elif "tcpSocket" in probe:
        how = f"tcp-socket :{probe['tcpSocket'].get('port', '?')}"
    elif "exec" in probe:
        how = "exec " + quoted(" ".join(map(str, probe["exec"].get("command") or [])), 120)
    elif "grpc" in probe:
        how = f"grpc :{probe['grpc'].get('port', '?')}"
    else:
        how = "unknown"
    return (f"{how} delay={probe.get('initialDelaySeconds', 0)}s timeout={probe.get('timeoutSeconds', 1)}s"
            f" period={probe.get('periodSeconds', 10)}s failure_threshold={probe.get('failureThreshold', 3)}")


def _env_lines(prefix, container):
    """Literal variables on one line by name (never their values), each valueFrom on its own."""
    literal = [env.get("name", "?") for env in container.get("env") or [] if not env.get("valueFrom")]
    lines = ([f"{prefix} env {', '.join(literal)} (literal value{'s' if len(literal) > 1 else ''}, not shown)"]
             if literal else [])
    for env in container.get("env") or []:
        name = env.get("name", "?")
        source = env.get("valueFrom")
        if not source:
            continue
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            lines.append(f"{prefix} env {name} from secret {ref.get('name', '?')} key {ref.get('key', '?')}")
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            lines.append(f"{prefix} env {name} from configmap {ref.get('name', '?')} key {ref.get('key', '?')}")
        elif "fieldRef" in source:
            lines.append(f"{prefix} env {name} from field {source['fieldRef'].get('fieldPath', '?')}")
        elif "resourceFieldRef" in source:
            lines.append(f"{prefix} env {name} from resource {source['resourceFieldRef'].get('resource', '?')}")
        else:
            lines.append(f"{prefix} env {name} from {', '.join(sorted(source))}")
    for env_from in container.get("envFrom") or []:
        for kind, key in (("configmap", "configMapRef"), ("secret", "secretRef")):
            if key in env_from:
                lines.append(f"{prefix} envFrom {kind} {env_from[key].get('name', '?')}")
    return lines


def _image_id(image, image_id):
    """The running image's id: without its repository when that is the spec's image's (said
    above), its digest shortened."""
    if not image_id:
        return "none"
    repository = image.split("@", 1)[0]
    repository = repository.rsplit(":", 1)[0] if ":" in repository.rsplit("/", 1)[-1] else repository
    image_id = image_id[len(repository) + 1:] if image_id.startswith(repository + "@") else image_id
    # a digest by its first 12 hex digits, as crictl and docker list images
    return re.sub(r"(sha256:[0-9a-f]{12})[0-9a-f]{52}\b", r"\1", image_id)


def _told_in(message, told, *, shortest=40):
    """The reason of the first event in `told` [(reason, message)] whose message holds `message`
    (quotes aside: the kubelet quotes an image with ' in one and " in the other), else None."""
    if len(message) < shortest:
        return None
    message = message.replace("'", '"')
    return next((reason for reason, text in told if message in text.replace("'", '"')), None)


def _state_line(prefix, label, state, *, pod, told=()):
    """`told`: the (reason, message) of the events shown below; a long message one of them
    carries (the kubelet's pull error, say) is said there only."""
    kind, reason, message, code = state_words(state)
    message = unsaid(message, pod, prefix.split(" ", 1)[1])
    if not kind:
        return None
    event = _told_in(message, told)
    message = f"(as in the {event} event below)" if event else message
    detail = (state or {}).get(kind) or {}
    words = [f"{prefix} {label}={kind}"]
    words += kv("reason", reason) + kv("exit_code", code)
    for key in ("startedAt", "finishedAt"):
        if detail.get(key):
            words.append(f"{key.replace('At', '_at')}={format_time(parse_time(detail[key]))}")
    words += kv("message", message, quote=STATE_MESSAGE_CHARS, keep_end=True)
    return " ".join(words)


def _container_lines(kind, container, status, *, pod, told=()):
    prefix = f"{kind} {container.get('name', '?')}"
    resources = container.get("resources") or {}
    sizes = [f"{part} " + (" ".join(f"{k}={v}" for k, v in sorted((resources.get(part) or {}).items())) or "none")
             for part in ("requests", "limits")]
    lines = [f"{prefix} image={container.get('image', '?')} {' '.join(sizes)}"]
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if container.get(probe):
            lines.append(f"{prefix} {probe.replace('Probe', '')}_probe {probe_text(container[probe])}")
    if container.get("command") or container.get("args"):
        lines.append(f"{prefix} command " + quoted(" ".join(map(str, (container.get("command") or [])
                                                                 + (container.get("args") or []))), 200))
    lines += _env_lines(prefix, container)
    if status is None:
        lines.append(f"{prefix} status=none (the container has not been created)")
        return lines
    lines.append(f"{prefix} ready={str(bool(status.get('ready'))).lower()} restarts={status.get('restartCount', 0)}"
                 f" image_id={_image_id(container.get('image') or '', status.get('imageID'))}")
    lines += [ln for ln in (_state_line(prefix, "state", status.get("state"), pod=pod, told=told),
                            _state_line(prefix, "last_state", status.get("lastState"), pod=pod, told=told)) if ln]
    return lines


ANNOTATION_CHARS = 200
SKIPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)  # a copy of the spec


def _volume_lines(spec):
    """`volume NAME KIND SOURCE`: claims, config maps and secrets by name (never their contents)."""
    lines = []
    for vol in spec.get("volumes") or []:
        name = vol.get("name", "?")
        if "persistentVolumeClaim" in vol:
            claim = vol["persistentVolumeClaim"]
            lines.append(f"volume {name} claim={claim.get('claimName', '?')}"
                         + (" read_only=true" if claim.get("readOnly") else ""))
        elif "configMap" in vol or "secret" in vol:
            kind = "configMap" if "configMap" in vol else "secret"
            ref = vol[kind] or {}
            # secret_name=, not secret=: a name key, which redaction shows (`secret=X` it hides)
            label = "configmap" if kind == "configMap" else "secret_name"
            lines.append(f"volume {name} {label}={ref.get('name') or ref.get('secretName', '?')}"
                         + (" optional=true" if ref.get("optional") else ""))
        elif "emptyDir" in vol:
            limit = (vol["emptyDir"] or {}).get("sizeLimit")
            lines.append(f"volume {name} emptyDir" + (f" size_limit={limit}" if limit else " size_limit=none"))
        elif "projected" in vol:
            kinds = sorted({k for source in (vol["projected"] or {}).get("sources") or [] for k in source})
            lines.append(f"volume {name} projected ({', '.join(kinds)})")
        else:
            lines.append(f"volume {name} {', '.join(sorted(k for k in vol if k != 'name')) or 'unknown'}")
    return lines


# True, these say no more than the node line (PodScheduled) and the containers' states do.
IMPLIED_CONDITIONS = ("PodScheduled", "Initialized", "PodReadyToStartContainers")


def _condition_lines(conditions, told=()):
    """`conditions A=True B=True` for those with nothing to explain (leaving out IMPLIED_CONDITIONS),
    then a `condition` line for each with a reason or message; one whose reason and message
    repeat an earlier one's says so, as does one whose message an event below carries (`told`)."""
    plain, lines, said = [], [], {}
    for cond in conditions:
        head = f"{cond.get('type', '?')}={cond.get('status', '?')}"
        why = (cond.get("reason"), cond.get("message"))
        if not any(why) and cond.get("type") in IMPLIED_CONDITIONS and cond.get("status") == "True":
            continue
        if not any(why):
            plain.append(head)
        elif why in said:
            lines.append(f"condition {head} (as {said[why]})")
        else:
            said[why] = cond.get("type", "?")
            event = _told_in(why[1] or "", told)
            lines.append(" ".join([f"condition {head}"] + kv("reason", why[0])
                                  + ([f"(message as in the {event} event below)"] if event
                                     else kv("message", why[1], quote=300))))
    return ([f"conditions {' '.join(plain)}"] if plain else []) + lines


def _annotation_lines(meta):
    notes = meta.get("annotations") or {}
    return [f"annotation {k}={quoted(v, ANNOTATION_CHARS)}" for k, v in sorted(notes.items())
            if k not in SKIPPED_ANNOTATIONS]


# Events of a pod starting as it should: counted on one line, not a line each.
ROUTINE_EVENTS = ("Scheduled", "Pulling", "Pulled", "Created", "Started")


def _routine(event):
    return (event.get("type") or "Normal") == "Normal" and event.get("reason") in ROUTINE_EVENTS


def _event_lines(recent, pod):
    """The pod's last events, oldest first; its routine start-up events counted on one line."""
    if not recent:
        return ["event none recorded for this pod (events expire after about an hour)"]
    routine, lines = {}, []
    for event in recent:
        if _routine(event):
            count = (event.get("series") or {}).get("count") or event.get("count") or 1
            routine[event["reason"]] = routine.get(event["reason"], 0) + count
        else:
            lines.append("event " + event_line(event, pod=pod))
    if routine:  # their times are the container's (its state lines say them)
        counts = ", ".join(f"{reason} x{count}" if count > 1 else reason for reason, count in routine.items())
        lines.insert(0, f"events start-up: {counts}")
    return lines


def _started(meta, status):
    """` started=TIME` when the pod started a minute or more after it was created (else nothing: it
    started when it was created, or not yet)."""
    created, started = parse_time(meta.get("creationTimestamp")), parse_time(status.get("startTime"))
    if started is None or (created is not None and (started - created).total_seconds() < 60):
        return ""
    return f" started={format_time(started)}"


def describe_digest(pod, *, owners, events, nodes=None, nodes_error=None, account=None,
                    account_error="not read", platform=()):
    """Pod JSON + owner chain text + the pod's events -> describe lines; `nodes` (read only for a
    pod not yet placed) let the scheduling lines say which constraint no node satisfies;
    `account` is the pod's ServiceAccount (None, with `account_error`, when it could not be read);
    `platform` are lines that say an image failed to start on its node's platform (platform.py)."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    name = f"{meta.get('namespace', '?')}/{meta.get('name', '?')}"
    lines = [f"pod {name} phase={status.get('phase', 'Unknown')}"
             + (f" reason={status['reason']}" if status.get("reason") else "")
             + f" qos={status.get('qosClass', 'unknown')}"
             f" created={format_time(parse_time(meta.get('creationTimestamp'))).replace('time=', '')}"
             + _started(meta, status),
             f"node {spec.get('nodeName') or 'none (not scheduled)'}",
             *platform,
             "owner " + (" -> ".join(owners) if owners else "none (a bare pod)")]
    if status.get("message"):
        lines.append(f"pod {name} status_message=" + quoted(status["message"], 400))
    # pod-template-hash (controller-revision-hash) repeats the owner's name (revision)
    labels = {k: v for k, v in (meta.get("labels") or {}).items()
              if not (k in ("pod-template-hash", "controller-revision-hash") and any(str(v) in o for o in owners))}
    if labels:
        lines.append("labels " + ",".join(f"{k}={v}" for k, v in sorted(labels.items())))
    lines += _annotation_lines(meta)
    recent = sorted_events(events)[-EVENTS_IN_DESCRIBE:]
    told = [(e.get("reason") or "NoReason", one_line(str(e.get("message") or ""), EVENT_MESSAGE_CHARS, keep_end=True))
            for e in recent if not _routine(e)]
    lines += _condition_lines(status.get("conditions") or [], told)
    lines += setting_lines(pod, account, account_error, events, nodes, nodes_error)
    for kind, key, status_key in (("init_container", "initContainers", "initContainerStatuses"),
                                  ("container", "containers", "containerStatuses")):
        by_name = {s.get("name"): s for s in status.get(status_key) or []}
        for container in spec.get(key) or []:
            lines += _container_lines(kind, container, by_name.get(container.get("name")),
                                      pod=meta.get("name", "?"), told=told)
    lines += _volume_lines(spec)
    lines += _event_lines(recent, meta.get("name"))
    return "\n".join(one_line(ln, LINE_CHARS, keep_end=True) for ln in lines)
