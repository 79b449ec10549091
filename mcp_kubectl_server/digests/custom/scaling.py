"""KEDA ScaledObject and ScaledJob: what is scaled, between which bounds, on which triggers, by
which HorizontalPodAutoscaler, and whether another autoscaler fights over the same target.

    spec.scaleTargetRef{apiVersion, kind, name} (ScaledJob: spec.jobTargetRef), minReplicaCount,
    maxReplicaCount, triggers[{type, metadata, authenticationRef}], status.hpaName,
    conditions Ready / Active / Fallback (and Paused)

A trigger's metadata is shown key by key with credential-like values masked (a connection
string is a credential); `context["hpas"]` are the namespace's HorizontalPodAutoscalers: the one
KEDA owns is named, any other one on the same target is a conflict line.
"""

from mcp_kubectl_server.digests.custom.common import condition, is_credential_key, value_text
from mcp_kubectl_server.digests.text import one_line

TRIGGERS_MAX = 8


def _target(spec):
    ref = spec.get("scaleTargetRef") or {}
    return ref.get("kind") or "Deployment", ref.get("name") or "?"


def _states(obj):
    parts = []
    for kind in ("Ready", "Active", "Fallback", "Paused"):
        cond = condition(obj, kind)
        if cond:
            parts.append(f"{kind}={cond.get('status', '?')}")
    return " ".join(parts) or "no conditions yet"


def _trigger_line(i, trigger):
    line = f"  trigger[{i}] type={one_line(trigger.get('type', '?'), 60)}"
    if trigger.get("name"):
        line += f" name={one_line(trigger['name'], 60)}"
    metadata = trigger.get("metadata") or {}
    if isinstance(metadata, dict) and metadata:
        shown = [f"{one_line(k, 60)}=" + ("<redacted>" if is_credential_key(k) else value_text(v, 200))
                 for k, v in sorted(metadata.items())]
        line += " metadata: " + ", ".join(shown)
    auth = trigger.get("authenticationRef") or {}
    if auth.get("name"):
        line += f" authenticationRef={auth.get('kind', 'TriggerAuthentication')}/{one_line(auth['name'], 80)}"
    return line


def scaled_object_lines(obj, context):
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    kind, name = _target(spec)
    lines = [f"  target={kind}/{name} min={spec.get('minReplicaCount', 0)} max={spec.get('maxReplicaCount', 100)}"
             f" hpa={status.get('hpaName') or 'none yet'} {_states(obj)}"]
    if spec.get("idleReplicaCount") is not None:
        lines[0] += f" idle={spec['idleReplicaCount']}"
    fallback = spec.get("fallback") or {}
    if fallback:
        lines.append(f"  fallback replicas={fallback.get('replicas', '?')} after failureThreshold="
                     f"{fallback.get('failureThreshold', '?')}")
    triggers = spec.get("triggers") or []
    lines += [_trigger_line(i, t) for i, t in enumerate(triggers[:TRIGGERS_MAX]) if isinstance(t, dict)]
    if len(triggers) > TRIGGERS_MAX:
        lines.append(f"  ... {len(triggers) - TRIGGERS_MAX} more triggers")
    lines += conflict_lines(obj, kind, name, context.get("hpas"))
    return lines


def conflict_lines(obj, kind, name, hpas):
    """A line for each HPA on the same target that this ScaledObject does not own."""
    if isinstance(hpas, str):
        return [f"  other autoscalers not readable: {one_line(hpas, 200)}"]
    owned = (obj.get("status") or {}).get("hpaName") or f"keda-hpa-{(obj.get('metadata') or {}).get('name')}"
    lines = []
    for hpa in hpas or []:
        hmd, hspec = hpa.get("metadata") or {}, hpa.get("spec") or {}
        ref = hspec.get("scaleTargetRef") or {}
        if hmd.get("name") == owned or ref.get("name") != name or (ref.get("kind") or "Deployment") != kind:
            continue
        lines.append(f"  conflict: HorizontalPodAutoscaler {hmd.get('name')} (not owned by this "
                     f"ScaledObject) also scales {kind}/{name} min={hspec.get('minReplicas', 1)} "
                     f"max={hspec.get('maxReplicas', '?')}: two autoscalers set its replicas in turn")
    return lines


def scaled_job_lines(obj, context):
    spec = obj.get("spec") or {}
    template = ((spec.get("jobTargetRef") or {}).get("template") or {}).get("spec") or {}
    images = [c.get("image", "?") for c in template.get("containers") or [] if isinstance(c, dict)]
    lines = [f"  job images={one_line(','.join(images) or '?', 200)} max={spec.get('maxReplicaCount', 100)}"
             f" strategy={(spec.get('scalingStrategy') or {}).get('strategy', 'default')} {_states(obj)}"]
    triggers = spec.get("triggers") or []
    lines += [_trigger_line(i, t) for i, t in enumerate(triggers[:TRIGGERS_MAX]) if isinstance(t, dict)]
    return lines
