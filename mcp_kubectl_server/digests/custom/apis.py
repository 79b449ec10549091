"""get_api_resources: the API groups the cluster serves, built-in ones on one line, custom ones in
full (each kind with its plural, scope, short names and the version discovery prefers), and the
operators those groups reveal (is KEDA installed, is there a service mesh, which GitOps tool).
"""

from mcp_kubectl_server.digests.text import one_line

# Group (or group suffix) -> the project that serves it.
OPERATORS = (("argoproj.io", "Argo (CD, Rollouts, Workflows)"), ("toolkit.fluxcd.io", "Flux (GitOps)"),
             ("keda.sh", "KEDA (event-driven autoscaling)"), ("istio.io", "Istio (service mesh)"),
             ("cert-manager.io", "cert-manager (certificates)"), ("chaos-mesh.org", "Chaos Mesh (fault injection)"),
             ("linkerd.io", "Linkerd (service mesh)"), ("monitoring.coreos.com", "Prometheus Operator"),
             ("external-secrets.io", "External Secrets"), ("bitnami.com", "Sealed Secrets"),
             ("gateway.networking.k8s.io", "Gateway API"), ("traefik.io", "Traefik"),
             ("kyverno.io", "Kyverno (policy)"), ("gatekeeper.sh", "OPA Gatekeeper (policy)"),
             ("velero.io", "Velero (backup)"), ("karpenter.sh", "Karpenter (node autoscaling)"))
KINDS_MAX = 60


def operator_of(group):
    return next((name for suffix, name in OPERATORS if group == suffix or group.endswith("." + suffix)), None)


def api_resources_digest(discovery, *, cluster_scoped_reads=True):
    """The text of get_api_resources for a read/discovery.py Discovery."""
    custom_groups = {}
    for kind in discovery.custom:
        custom_groups.setdefault((kind.group, kind.version), []).append(kind)
    lines = [f"API groups served: {len(discovery.builtin)} built-in, {len(custom_groups)} custom "
             "(from CustomResourceDefinitions or aggregated API servers)."]
    lines.append("built-in: " + ", ".join(f"{g}/{v}" if g else v for g, v in discovery.builtin))
    found = sorted({op for op in (operator_of(g) for g, _ in custom_groups) if op})
    lines.append("operators recognised: " + (", ".join(found) if found else "none of the known ones"))
    shown = 0
    for (group, version), kinds in sorted(custom_groups.items()):
        lines.append(f"{group}/{version}" + (f" ({operator_of(group)})" if operator_of(group) else "") + ":")
        for kind in sorted(kinds, key=lambda k: k.kind):
            shown += 1
            if shown > KINDS_MAX:
                continue
            scope = "namespaced" if kind.namespaced else "cluster-scoped"
            lines.append(f"  {kind.kind} plural={kind.plural}.{group} {scope}"
                         + (f" short={','.join(kind.short_names)}" if kind.short_names else ""))
    if shown > KINDS_MAX:
        lines.append(f"... {shown - KINDS_MAX} more custom kinds not shown")
    for group_version, why in discovery.failed:
        lines.append(f"{group_version}: not discoverable now ({one_line(why, 200)}): an aggregated API whose "
                     "server is down fails this way")
    lines.append("get_custom_resources reads the namespaced custom kinds in the allowed namespaces"
                 + (" (and a cert-manager ClusterIssuer by name)" if cluster_scoped_reads else "") + ".")
    return "\n".join(lines)
