"""describe_pod digest: one pod's JSON (+ owner chain and events) -> one fact per line.

Lines start with a stable prefix (`pod`, `node`, `owner`, `labels`, `annotation`, `conditions`
(those with nothing to explain, on one line), `condition`, `scheduling`, `init_container NAME
...`, `container NAME ...`, `volume`, `event`) so a reader can grep them. An event line leaves
out the pod it is about (the pod described). The `scheduling` lines (scheduling.py) say the
pod's constraints and, for a pod not yet placed, which one no node satisfies (the nodes are read
only then).
Annotation values are cut short and, like everything, redacted on the way out. Environment variables appear by NAME only: a literal value is
never printed, a valueFrom shows where the value comes from (secret/configmap name and key).
"""

from mcp_kubectl_server.digests.events import event_line, sorted_events
from mcp_kubectl_server.digests.pods import state_words, unsaid
from mcp_kubectl_server.digests.text import format_time, kv, one_line, parse_time, quoted
from mcp_kubectl_server.digests.pod_config import dns_line, pull_secret_lines, service_account_line
from mcp_kubectl_server.digests.scheduling import pod_lines as scheduling_lines

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
    lines = []
    for env in container.get("env") or []:
        name = env.get("name", "?")
        source = env.get("valueFrom")
        if not source:
            lines.append(f"{prefix} env {name} (literal value, not shown)")
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


def _state_line(prefix, label, state, *, pod):
    kind, reason, message, code = state_words(state)
    message = unsaid(message, pod, prefix.split(" ", 1)[1])
    if not kind:
        return None
    detail = (state or {}).get(kind) or {}
    words = [f"{prefix} {label}={kind}"]
    words += kv("reason", reason) + kv("exit_code", code)
    for key in ("startedAt", "finishedAt"):
        if detail.get(key):
            words.append(f"{key.replace('At', '_at')}={format_time(parse_time(detail[key]))}")
    words += kv("message", message, quote=STATE_MESSAGE_CHARS, keep_end=True)
    return " ".join(words)


def _container_lines(kind, container, status, *, pod):
    prefix = f"{kind} {container.get('name', '?')}"
    lines = [f"{prefix} image={container.get('image', '?')}"]
    resources = container.get("resources") or {}
    for part in ("requests", "limits"):
        values = resources.get(part) or {}
        text = " ".join(f"{k}={v}" for k, v in sorted(values.items())) or "none"
        lines.append(f"{prefix} {part} {text}")
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
                 f" image_id={status.get('imageID') or 'none'}")
    lines += [ln for ln in (_state_line(prefix, "state", status.get("state"), pod=pod),
                            _state_line(prefix, "last_state", status.get("lastState"), pod=pod)) if ln]
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


def _condition_lines(conditions):
    """`conditions A=True B=True` for those with nothing to explain, then a `condition` line for
    each with a reason or message; one whose reason and message repeat an earlier one's says so."""
    plain, lines, said = [], [], {}
    for cond in conditions:
        head = f"{cond.get('type', '?')}={cond.get('status', '?')}"
        why = (cond.get("reason"), cond.get("message"))
        if not any(why):
            plain.append(head)
        elif why in said:
            lines.append(f"condition {head} (reason and message as {said[why]})")
        else:
            said[why] = cond.get("type", "?")
            lines.append(" ".join([f"condition {head}"] + kv("reason", why[0])
                                  + kv("message", why[1], quote=300)))
    return ([f"conditions {' '.join(plain)}"] if plain else []) + lines


def _annotation_lines(meta):
    notes = meta.get("annotations") or {}
    return [f"annotation {k}={quoted(v, ANNOTATION_CHARS)}" for k, v in sorted(notes.items())
            if k not in SKIPPED_ANNOTATIONS]


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
             f" created={format_time(parse_time(meta.get('creationTimestamp')))}"
             f" started={format_time(parse_time(status.get('startTime')))}",
             f"node {spec.get('nodeName') or 'none (not scheduled)'}",
             *platform,
             "owner " + (" -> ".join(owners) if owners else "none (a bare pod)")]
    if status.get("message"):
        lines.append(f"pod {name} status_message=" + quoted(status["message"], 400))
    labels = meta.get("labels") or {}
    if labels:
        lines.append("labels " + ",".join(f"{k}={v}" for k, v in sorted(labels.items())))
    lines += _annotation_lines(meta)
    lines.append(service_account_line(pod, account, account_error=account_error))
    lines += pull_secret_lines(pod, account, account_error=account_error, events=events)
    lines.append(dns_line(spec))
    lines += _condition_lines(status.get("conditions") or [])
    lines += scheduling_lines(pod, nodes, nodes_error=nodes_error)
    for kind, key, status_key in (("init_container", "initContainers", "initContainerStatuses"),
                                  ("container", "containers", "containerStatuses")):
        by_name = {s.get("name"): s for s in status.get(status_key) or []}
        for container in spec.get(key) or []:
            lines += _container_lines(kind, container, by_name.get(container.get("name")),
                                      pod=meta.get("name", "?"))
    lines += _volume_lines(spec)
    recent = sorted_events(events)[-EVENTS_IN_DESCRIBE:]
    lines += ["event " + event_line(e, pod=meta.get("name")) for e in recent] or ["event none recorded for this pod (events expire after about an hour)"]
    return "\n".join(one_line(ln, LINE_CHARS, keep_end=True) for ln in lines)
