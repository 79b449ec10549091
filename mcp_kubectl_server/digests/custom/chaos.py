"""Chaos Mesh experiments (*Chaos kinds: NetworkChaos, PodChaos, StressChaos, IOChaos, ...) and
Schedule: what fault is injected into which pods, how, for how long, and whether it is paused.

    spec.action (delay, loss, partition, pod-kill, ...), spec.mode (one, all, fixed, fixed-percent,
    random-max-percent) and spec.value, spec.selector{namespaces, labelSelectors, pods,
    expressionSelectors}, spec.duration, the action's own block (delay{latency, jitter}, loss,
    stressors), spec.direction and spec.target (NetworkChaos), the pause annotation
    experiment.chaos-mesh.org/pause="true"; Schedule: spec.schedule (cron), spec.type and the
    experiment under its kind's lowerCamel key (networkChaos, podChaos, ...)

`context["pods"]` are the namespace's pods; a selector naming other namespaces says which of
them are outside the scope (their pods are not read).
"""

from mcp_kubectl_server.digests.custom.common import md
from mcp_kubectl_server.digests.custom.mesh import pods_line
from mcp_kubectl_server.digests.selectors import selector_text
from mcp_kubectl_server.digests.text import one_line

PAUSE = "experiment.chaos-mesh.org/pause"
_ACTION_BLOCKS = ("delay", "loss", "duplicate", "corrupt", "bandwidth", "stressors", "attr", "mistake")


def _paused(obj):
    return str((md(obj).get("annotations") or {}).get(PAUSE, "")).lower() == "true"


def experiment_lines(spec, context, namespace, *, paused):
    selector = spec.get("selector") or {}
    namespaces = selector.get("namespaces") or [namespace]
    labels = selector.get("labelSelectors") or {}
    lines = [f"  action={spec.get('action', '?')} mode={spec.get('mode', '?')}"
             + (f" value={spec['value']}" if spec.get("value") else "")
             + f" duration={spec.get('duration') or 'until deleted'} paused={'true' if paused else 'false'}"]
    for key in _ACTION_BLOCKS:
        if isinstance(spec.get(key), dict):
            lines.append(f"  {key}: " + ", ".join(f"{k}={one_line(v, 80)}" for k, v in sorted(spec[key].items())))
    target = f"  selector namespaces={','.join(map(str, namespaces))}"
    target += f" labels={selector_text({'matchLabels': labels, 'matchExpressions': selector.get('expressionSelectors')}, empty='any')}"
    if selector.get("pods"):
        target += f" pods={one_line(selector['pods'], 160)}"
    lines.append(target)
    if spec.get("direction"):
        lines.append(f"  direction={spec['direction']}" + (
            f" target selector labels={selector_text({'matchLabels': ((spec.get('target') or {}).get('selector') or {}).get('labelSelectors') or {}}, empty='any')}"
            if spec.get("target") else ""))
    if namespace in namespaces:
        lines.append(pods_line({"matchLabels": labels, "matchExpressions": selector.get("expressionSelectors")},
                               context.get("pods"), what=f"pods it matches in {namespace}"))
    outside = [n for n in namespaces if n not in context.get("allowed", (namespace,))]
    if outside:
        lines.append(f"  also selects pods in {', '.join(outside)} (outside this server's scope: not read)")
    return lines


def chaos_lines(obj, context):
    spec = obj.get("spec") or {}
    lines = experiment_lines(spec, context, md(obj).get("namespace", ""), paused=_paused(obj))
    desired = ((obj.get("status") or {}).get("experiment") or {}).get("desiredPhase")
    if desired:
        lines.append(f"  desiredPhase={desired}")
    return lines


def schedule_lines(obj, context):
    spec = obj.get("spec") or {}
    kind = spec.get("type") or "?"
    lines = [f"  schedule=\"{one_line(spec.get('schedule', '?'), 60)}\" type={kind}"
             f" concurrencyPolicy={spec.get('concurrencyPolicy', 'Forbid')} historyLimit={spec.get('historyLimit', 1)}"
             f" paused={'true' if _paused(obj) else 'false'}"]
    key = kind[:1].lower() + kind[1:] if kind != "?" else ""
    if isinstance(spec.get(key), dict):
        lines += experiment_lines(spec[key], context, md(obj).get("namespace", ""), paused=_paused(obj))
    active = (obj.get("status") or {}).get("active") or []
    if active:
        lines.append("  active: " + ", ".join(f"{a.get('kind', '?')}/{a.get('name', '?')}" for a in active if isinstance(a, dict)))
    if (obj.get("status") or {}).get("time"):
        lines.append(f"  last run={obj['status']['time']}")
    return lines
