"""Digests of custom resources (get_custom_resources) and of the cluster's APIs (get_api_resources).

    common.py        head, conditions, the generic digest (flattened, bounded), names-only
                     digest of kinds that hold secrets
    gitops.py        Argo CD Application; Flux Kustomization, HelmRelease, GitRepository, HelmRepository
    scaling.py       KEDA ScaledObject (and the HPA conflict), ScaledJob
    mesh.py          Istio AuthorizationPolicy, PeerAuthentication, VirtualService, DestinationRule
    certmanager.py   cert-manager Certificate, Issuer, ClusterIssuer
    chaos.py         Chaos Mesh *Chaos kinds and Schedule
    apis.py          get_api_resources: groups, custom kinds, the operators they reveal
"""

from mcp_kubectl_server.digests.custom import certmanager, chaos, gitops, mesh, scaling
from mcp_kubectl_server.digests.custom.common import (condition, condition_lines, generic_lines, head_lines,
                                                      holds_secrets, secret_lines)
from mcp_kubectl_server.digests.events import event_line, sorted_events

OBJECTS_MAX = 30
KNOWN = {
    ("argoproj.io", "Application"): gitops.application_lines,
    ("kustomize.toolkit.fluxcd.io", "Kustomization"): gitops.flux_lines,
    ("helm.toolkit.fluxcd.io", "HelmRelease"): gitops.flux_lines,
    ("source.toolkit.fluxcd.io", "GitRepository"): gitops.flux_lines,
    ("source.toolkit.fluxcd.io", "HelmRepository"): gitops.flux_lines,
    ("keda.sh", "ScaledObject"): scaling.scaled_object_lines,
    ("keda.sh", "ScaledJob"): scaling.scaled_job_lines,
    ("security.istio.io", "AuthorizationPolicy"): mesh.authorization_policy_lines,
    ("security.istio.io", "PeerAuthentication"): mesh.peer_authentication_lines,
    ("networking.istio.io", "VirtualService"): mesh.virtual_service_lines,
    ("networking.istio.io", "DestinationRule"): mesh.destination_rule_lines,
    ("cert-manager.io", "Certificate"): certmanager.certificate_lines,
    ("cert-manager.io", "Issuer"): certmanager.issuer_lines,
    ("cert-manager.io", "ClusterIssuer"): certmanager.issuer_lines,
}


def digest_for(group, kind):
    """The lines function written for this kind, or None (the generic digest serves it)."""
    if group == "chaos-mesh.org":
        if kind == "Schedule":
            return chaos.schedule_lines
        if kind.endswith("Chaos"):
            return chaos.chaos_lines
    return KNOWN.get((group, kind))


def _troubled(obj):
    """0 for an object that says something is wrong (sort key: those first)."""
    status = obj.get("status") or {}
    ready = condition(obj, "Ready").get("status")
    health = (status.get("health") or {}).get("status")
    sync = (status.get("sync") or {}).get("status")
    bad = ready in ("False", "Unknown") or health not in (None, "Healthy") or sync not in (None, "Synced")
    return 0 if bad else 1


def object_lines(api_kind, obj, context, *, full=False):
    """The digest of one object: head, conditions, then its kind's lines (or the generic ones)."""
    lines = head_lines(obj, api_kind.kind, context["now"]) + condition_lines(obj, context["now"])
    if holds_secrets(api_kind.group, api_kind.kind):
        return lines + secret_lines(obj)
    known = digest_for(api_kind.group, api_kind.kind)
    if known is not None:
        lines += known(obj, context)
        if full:
            lines += generic_lines(obj, full=True)
        return lines
    return lines + generic_lines(obj, full=full)


def custom_resources_digest(api_kind, objects, *, namespace, context, name=None, events=None):
    """get_custom_resources: a header, then each object (troubled first), bounded."""
    where = f"cluster-scoped" if not api_kind.namespaced else f"in namespace {namespace}"
    title = f"{api_kind.kind} ({api_kind.plural}.{api_kind.group}/{api_kind.version}) {where}"
    if not objects:
        return f"{title}: no objects" + (f" named {name}" if name else "") + "."
    ordered = sorted(objects, key=_troubled)
    known = ("names and references only: this kind holds secrets" if holds_secrets(api_kind.group, api_kind.kind)
             else "a digest written for this kind" if digest_for(api_kind.group, api_kind.kind) else "the generic digest")
    lines = [f"{title}: {len(objects)} object(s) ({known})"]
    for obj in ordered[:OBJECTS_MAX]:
        lines += object_lines(api_kind, obj, context, full=bool(name))
    if len(ordered) > OBJECTS_MAX:
        lines.append(f"... {len(ordered) - OBJECTS_MAX} more objects not shown: name one with `name`")
    if events:
        lines.append("events:")
        lines += ["  " + event_line(e, context["now"]) for e in sorted_events(events)[-10:]]
    elif name and events is not None:
        lines.append("events: none kept about it (events expire after an hour)")
    return "\n".join(lines)
