"""describe_workload digest: one workload in full, and what changed between its last two revisions.

Input: the workload's API JSON, its revisions (ReplicaSets for a Deployment, ControllerRevisions
for a StatefulSet or DaemonSet, Jobs for a CronJob), its HPA, the pods its selector matches and
the events about it and its revisions. Lines start with a stable prefix (`workload`, `strategy`,
`selector`, `replicas`, `condition`, `revision`, `change`, `template`, `field`, `hpa`, `pod`, `event`).
The template diff names env variables and their sources, never literal values, and the ConfigMaps,
Secrets and claims each revision mounts (template_config.py); it and the `template scheduling`
lines say the pod template's scheduling constraints (scheduling.py); the `field` lines say which
field manager last wrote each field of the workload and its template (managed_fields.py).
"""

from datetime import datetime, timezone

from mcp_kubectl_server.digests.pod_detail import probe_text
from mcp_kubectl_server.digests.events import event_line, sorted_events
from mcp_kubectl_server.digests.pods import pod_is_healthy, pod_line
from mcp_kubectl_server.digests.text import format_time, kv, one_line, parse_time
from mcp_kubectl_server.digests.managed_fields import field_lines
from mcp_kubectl_server.digests.scheduling import constraint_changes, constraint_lines
from mcp_kubectl_server.digests.template_config import config_changes, mounted_objects
from mcp_kubectl_server.digests.workloads import counts, hpa_words, job_state, problems, since

EVENTS_MAX = 15
PODS_MAX = 30
REVISIONS_MAX = 5
CHECKSUM_WORDS = ("checksum", "config-hash", "confighash", "restartedat")


def revision_number(rev):
    """A revision's number: ControllerRevision.revision, else the deployment revision annotation."""
    if isinstance(rev.get("revision"), int):
        return rev["revision"]
    value = ((rev.get("metadata") or {}).get("annotations") or {}).get("deployment.kubernetes.io/revision")
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def revision_template(rev):
    """The pod template a revision stands for (ReplicaSet spec, ControllerRevision data, Job spec)."""
    if rev.get("kind") == "ControllerRevision":
        return ((rev.get("data") or {}).get("spec") or {}).get("template") or {}
    return (rev.get("spec") or {}).get("template") or {}


def workload_template(obj):
    spec = obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        return ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}
    return spec.get("template") or {}


def _containers(template):
    spec = template.get("spec") or {}
    pairs = [("init_container", c) for c in spec.get("initContainers") or []]
    pairs += [("container", c) for c in spec.get("containers") or []]
    return {(kind, c.get("name", "?")): c for kind, c in pairs}


def _env_sources(container):
    out = {}
    for env in container.get("env") or []:
        src = env.get("valueFrom") or {}
        if not src:
            out[env.get("name", "?")] = ("literal value", env.get("value", ""))
        else:
            key, ref = next(iter(sorted(src.items())), ("?", {}))
            ref = ref or {}
            where = ref.get("name") or ref.get("fieldPath") or ref.get("resource") or ""
            out[env.get("name", "?")] = (f"{key.replace('KeyRef', '').replace('Ref', '')} {where}"
                                         + (f" key {ref['key']}" if ref.get("key") else ""), None)
    for env_from in container.get("envFrom") or []:
        for kind, key in (("configmap", "configMapRef"), ("secret", "secretRef")):
            if key in env_from:
                out[f"envFrom {kind} {env_from[key].get('name', '?')}"] = ("present", None)
    return out


def _env_changes(prefix, old, new):
    lines = []
    before, after = _env_sources(old), _env_sources(new)
    for name in sorted(set(before) | set(after)):
        if name not in after:
            lines.append(f"{prefix} env {name} removed (was {before[name][0]})")
        elif name not in before:
            lines.append(f"{prefix} env {name} added ({after[name][0]})")
        elif before[name][0] != after[name][0]:
            lines.append(f"{prefix} env {name} source {before[name][0]} -> {after[name][0]}")
        elif before[name][1] != after[name][1]:
            lines.append(f"{prefix} env {name} literal value changed (values not shown)")
    return lines


def _resources_text(container, part):
    values = (container.get("resources") or {}).get(part) or {}
    return " ".join(f"{k}={v}" for k, v in sorted(values.items())) or "none"


def _container_changes(kind, name, old, new):
    prefix = f"change {kind} {name}"
    if old is None:
        return [f"{prefix} added image={new.get('image', '?')}"]
    if new is None:
        return [f"{prefix} removed (was image={old.get('image', '?')})"]
    lines = []
    if old.get("image") != new.get("image"):
        lines.append(f"{prefix} image {old.get('image', '?')} -> {new.get('image', '?')}")
    lines += _env_changes(prefix, old, new)
    for part in ("requests", "limits"):
        if _resources_text(old, part) != _resources_text(new, part):
            lines.append(f"{prefix} {part} {_resources_text(old, part)} -> {_resources_text(new, part)}")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        a, b = old.get(probe), new.get(probe)
        if a != b:
            label = probe.replace("Probe", "") + "_probe"
            before, after = (probe_text(p) if p else "none" for p in (a, b))
            lines.append(f"{prefix} {label} {before} -> {after}")
    if (old.get("command"), old.get("args")) != (new.get("command"), new.get("args")):
        lines.append(f"{prefix} command or args changed")
    return lines


def template_changes(old, new):
    """Lines saying what differs between two pod templates (images, env, resources, probes,
    checksums, volumes and what they mount, service account, pull secrets, DNS, scheduling)."""
    lines = []
    before, after = _containers(old), _containers(new)
    for key in sorted(set(before) | set(after)):
        lines += _container_changes(key[0], key[1], before.get(key), after.get(key))
    old_notes = (old.get("metadata") or {}).get("annotations") or {}
    new_notes = (new.get("metadata") or {}).get("annotations") or {}
    for key in sorted(set(old_notes) | set(new_notes)):
        if any(w in key.lower() for w in CHECKSUM_WORDS) and old_notes.get(key) != new_notes.get(key):
            lines.append(f"change annotation {key} {old_notes.get(key, 'none')} -> "
                         f"{new_notes.get(key, 'none')}")
    lines += config_changes((old or {}).get("spec"), (new or {}).get("spec"))
    lines += ["change " + line for line in constraint_changes((old or {}).get("spec"), (new or {}).get("spec"))]
    return lines or ["change none found in images, env, resources, probes, checksum annotations, volumes, "
                     "service account, pull secrets, DNS or scheduling constraints"]


def template_scheduling_lines(template):
    """`template scheduling ...` for each constraint the current pod template sets (none: no line)."""
    return ["template scheduling " + line for line in constraint_lines((template or {}).get("spec") or {})
            if not line.endswith(": none")]


def _revision_line(rev, pods):
    meta = rev.get("metadata") or {}
    containers = (revision_template(rev).get("spec") or {}).get("containers") or []
    images = ",".join(c.get("image", "?") for c in containers)
    label = "job" if rev.get("kind") == "Job" else f"revision {revision_number(rev)}"
    words = [label, f"{rev.get('kind', '?')}/{meta.get('name', '?')}", f"images={images or '?'}"]
    if rev.get("kind") == "ReplicaSet":
        st = rev.get("status") or {}
        desired = (rev.get("spec") or {}).get("replicas", 0)
        words += [f"desired={desired}", f"ready={st.get('readyReplicas', 0)}"]
    elif rev.get("kind") == "Job":
        words.append(f"state={job_state(rev)[0]}")
    else:
        hashes = {meta.get("name"), ((meta.get("labels") or {}).get("controller-revision-hash"))}
        mine = [p for p in pods
                if ((p.get("metadata") or {}).get("labels") or {}).get("controller-revision-hash") in hashes]
        ready = sum(1 for p in mine if pod_is_healthy(p))
        words += [f"pods={len(mine)}", f"ready={ready}"]
    mounts = mounted_objects(revision_template(rev))
    if mounts:
        words.append("mounts=" + ",".join(mounts))
    words.append(f"created={format_time(parse_time(meta.get('creationTimestamp')))}")
    return " ".join(words)


def _head_lines(obj, now, revisions):
    kind, meta, spec = obj.get("kind", "?"), obj.get("metadata") or {}, obj.get("spec") or {}
    status = obj.get("status") or {}
    name = f"{meta.get('namespace', '?')}/{meta.get('name', '?')}"
    bad = problems(obj, jobs=revisions)
    lines = [f"workload {kind} {name} " + ("unhealthy: " + " ".join(bad) if bad else "healthy")
             + f" created={format_time(parse_time(meta.get('creationTimestamp')))}"]
    strategy = spec.get("strategy") or spec.get("updateStrategy") or {}
    if strategy:
        rolling = strategy.get("rollingUpdate") or {}
        lines.append(" ".join([f"strategy {strategy.get('type', '?')}"]
                              + [f"{k}={v}" for k, v in sorted(rolling.items())]
                              + kv("progress_deadline", spec.get("progressDeadlineSeconds"))))
    if kind == "CronJob":
        lines.append(" ".join([f"schedule {spec.get('schedule', '?')}"] + kv("time_zone", spec.get("timeZone"))
                              + [f"suspend={str(bool(spec.get('suspend'))).lower()}",
                                 f"concurrency={spec.get('concurrencyPolicy', 'Allow')}"]
                              + [f"last_schedule={status.get('lastScheduleTime') or 'never'}",
                                 f"last_success={status.get('lastSuccessfulTime') or 'never'}"]))
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    if selector:
        lines.append("selector " + ",".join(f"{k}={v}" for k, v in sorted(selector.items())))
    lines.append("replicas " + " ".join(f"{k}={v}" for k, v in counts(obj).items()))
    for cond in status.get("conditions") or []:
        lines.append(" ".join([f"condition {cond.get('type', '?')}={cond.get('status', '?')}"]
                              + kv("reason", cond.get("reason"))
                              + since(cond.get("lastTransitionTime") or cond.get("lastUpdateTime"), now)
                              + kv("message", cond.get("message"), quote=300)))
    return lines


def workload_digest(obj, *, revisions=(), hpa=None, pods=(), events=(), now=None):
    """Workload JSON + revisions, HPA, pods and events -> describe lines."""
    now = now or datetime.now(timezone.utc)
    lines = _head_lines(obj, now, revisions)
    def created(rev):
        return (rev.get("metadata") or {}).get("creationTimestamp") or ""
    # a CronJob's Jobs have no revision number: newest by creation
    numbered = obj.get("kind") != "CronJob"
    revs = sorted(revisions, key=lambda r: (revision_number(r) if numbered else 0, created(r)))
    lines += [_revision_line(r, pods) for r in revs[-REVISIONS_MAX:][::-1]] or ["revision none found"]
    if len(revs) >= 2 and obj.get("kind") != "CronJob":
        old, new = revs[-2], revs[-1]
        lines.append(f"change from revision {revision_number(old)} ({old['metadata'].get('name', '?')}) "
                     f"to {revision_number(new)} ({new['metadata'].get('name', '?')}):")
        lines += template_changes(revision_template(old), revision_template(new))
    lines += template_scheduling_lines(workload_template(obj))
    lines += field_lines(obj)
    if obj.get("kind") in ("Deployment", "StatefulSet"):
        lines.append(" ".join(["hpa"] + hpa_words(hpa)))
    shown = sorted(pods, key=lambda p: (p.get("metadata") or {}).get("name", ""))[:PODS_MAX]
    lines += ["pod " + pod_line(p, now) for p in shown] or ["pod none match the selector"]
    if len(pods) > PODS_MAX:
        lines.append(f"pod not shown: {len(pods) - PODS_MAX} more; use get_pods with a selector")
    recent = sorted_events(events)[-EVENTS_MAX:]
    lines += ["event " + event_line(e, now) for e in recent] or [
        "event none recorded (events expire after about an hour; the conditions above outlive them)"]
    return "\n".join(one_line(ln, 1000) for ln in lines)
