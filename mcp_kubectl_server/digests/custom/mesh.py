"""Istio: AuthorizationPolicy, PeerAuthentication, VirtualService, DestinationRule.

    AuthorizationPolicy  spec.action (ALLOW default, DENY, AUDIT, CUSTOM), spec.selector.matchLabels
                         (absent: every workload of the namespace), spec.rules[{from[{source}],
                         to[{operation}], when[{key, values, notValues}]}], one line per rule
    PeerAuthentication   spec.mtls.mode (UNSET, DISABLE, PERMISSIVE, STRICT), spec.portLevelMtls
    VirtualService       spec.hosts, spec.gateways, spec.http[{match, route[{destination{host,
                         subset, port}, weight}], timeout, retries, fault}] (and tcp/tls routes)
    DestinationRule      spec.host, spec.subsets[{name, labels}], spec.trafficPolicy

`context["pods"]` are the namespace's pods (labels only): a selector's matches are named. The
semantics said in words: an ALLOW policy with no rules allows nothing; a DENY policy that
matches denies whatever any ALLOW says; an ALLOW policy on a workload denies what it does not list.
"""

from mcp_kubectl_server.digests.custom.common import LIST_ITEMS_MAX
from mcp_kubectl_server.digests.selectors import selector_matches, selector_text
from mcp_kubectl_server.digests.text import one_line

_SOURCE_FIELDS = ("principals", "notPrincipals", "requestPrincipals", "notRequestPrincipals", "namespaces",
                  "notNamespaces", "ipBlocks", "notIpBlocks", "remoteIpBlocks", "notRemoteIpBlocks")
_OPERATION_FIELDS = ("hosts", "notHosts", "ports", "notPorts", "methods", "notMethods", "paths", "notPaths")


def pods_line(selector, pods, *, what="applies to"):
    """'  applies to: pod a, pod b' for a {matchLabels} selector against the namespace's pods."""
    if isinstance(pods, str):
        return f"  {what}: pods not readable ({one_line(pods, 120)})"
    matched = [p["metadata"]["name"] for p in pods or []
               if selector_matches(selector or {}, (p.get("metadata") or {}).get("labels"))]
    names = ", ".join(matched[:LIST_ITEMS_MAX]) + (f" and {len(matched) - LIST_ITEMS_MAX} more"
                                                  if len(matched) > LIST_ITEMS_MAX else "")
    return f"  {what}: {len(matched)} pod(s)" + (f": {names}" if matched else " (it selects no pod now)")


def _fields(block, names):
    parts = []
    for name in names:
        values = block.get(name)
        if values:
            parts.append(f"{name}=[{one_line(','.join(map(str, values)), 200)}]")
    return " ".join(parts)


def _rule_line(i, rule):
    sources = [_fields(f.get("source") or {}, _SOURCE_FIELDS) for f in rule.get("from") or [] if isinstance(f, dict)]
    ops = [_fields(t.get("operation") or {}, _OPERATION_FIELDS) for t in rule.get("to") or [] if isinstance(t, dict)]
    conds = [f"{c.get('key', '?')}" + (f" in [{one_line(','.join(map(str, c['values'])), 120)}]" if c.get("values") else "")
             + (f" notin [{one_line(','.join(map(str, c['notValues'])), 120)}]" if c.get("notValues") else "")
             for c in rule.get("when") or [] if isinstance(c, dict)]
    return (f"  rule[{i}] from: {' OR '.join(s or 'any source' for s in sources) or 'any source'};"
            f" to: {' OR '.join(o or 'any operation' for o in ops) or 'any operation'}"
            + (f"; when: {' AND '.join(conds)}" if conds else ""))


def authorization_policy_lines(obj, context):
    spec = obj.get("spec") or {}
    action = spec.get("action") or "ALLOW"
    selector = spec.get("selector")
    rules = spec.get("rules") or []
    lines = [f"  action={action} selector={selector_text(selector, empty='every workload in the namespace')}"
             + (f" provider={one_line((spec.get('provider') or {}).get('name', '?'), 60)}" if action == "CUSTOM" else "")]
    if spec.get("targetRefs") or spec.get("targetRef"):
        refs = spec.get("targetRefs") or [spec.get("targetRef")]
        lines.append("  targets: " + ", ".join(f"{r.get('kind', '?')}/{r.get('name', '?')}" for r in refs if isinstance(r, dict)))
    else:
        lines.append(pods_line(selector, context.get("pods")))
    if not rules:
        lines.append("  no rules: " + {"ALLOW": "allows nothing, so every request to these workloads is denied",
                                       "DENY": "denies nothing"}.get(action, "matches nothing"))
    lines += [_rule_line(i, r) for i, r in enumerate(rules[:LIST_ITEMS_MAX]) if isinstance(r, dict)]
    if action == "DENY" and rules:
        lines.append("  a request matching any rule is denied (403 RBAC: access denied), whatever ALLOW policies say")
    elif action == "ALLOW" and rules:
        lines.append("  requests to these workloads that match no rule of any ALLOW policy are denied (403)")
    return lines


def peer_authentication_lines(obj, context):
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    mode = (spec.get("mtls") or {}).get("mode") or "UNSET"
    lines = [f"  mtls={mode}" + (" (inherits the mesh or namespace setting)" if mode == "UNSET" else "")
             + f" selector={selector_text(selector, empty='every workload in the namespace')}"]
    for port, setting in sorted((spec.get("portLevelMtls") or {}).items()):
        lines.append(f"  port {port}: mtls={(setting or {}).get('mode', 'UNSET')}")
    if selector:
        lines.append(pods_line(selector, context.get("pods")))
    return lines


def _destination(route):
    dest = route.get("destination") or {}
    text = one_line(dest.get("host", "?"), 120)
    if dest.get("subset"):
        text += f" subset={one_line(dest['subset'], 60)}"
    if (dest.get("port") or {}).get("number"):
        text += f":{dest['port']['number']}"
    return text + (f" weight={route['weight']}" if route.get("weight") is not None else "")


def _match_text(match):
    parts = []
    for m in match or []:
        if not isinstance(m, dict):
            continue
        for key in ("uri", "authority", "method"):
            if isinstance(m.get(key), dict) and m[key]:
                kind, value = next(iter(m[key].items()))
                parts.append(f"{key} {kind} {one_line(value, 80)}")
        for header in sorted(m.get("headers") or {}):
            parts.append(f"header {one_line(header, 60)}")
    return " OR ".join(parts) or "everything"


def virtual_service_lines(obj, context):
    spec = obj.get("spec") or {}
    lines = [f"  hosts={one_line(','.join(spec.get('hosts') or []) or '?', 200)}"
             + (f" gateways={one_line(','.join(spec['gateways']), 120)}" if spec.get("gateways") else "")]
    for proto in ("http", "tls", "tcp"):
        for i, route in enumerate((spec.get(proto) or [])[:LIST_ITEMS_MAX]):
            if not isinstance(route, dict):
                continue
            line = f"  {proto}[{i}]" + (f" name={one_line(route['name'], 60)}" if route.get("name") else "")
            line += f" match: {_match_text(route.get('match'))} -> " + (
                ", ".join(_destination(r) for r in route.get("route") or [] if isinstance(r, dict)) or "no route")
            if route.get("timeout"):
                line += f" timeout={one_line(route['timeout'], 20)}"
            retries = route.get("retries") or {}
            if retries:
                line += (f" retries={retries.get('attempts', '?')} perTryTimeout={retries.get('perTryTimeout', '-')}"
                         + (f" retryOn={one_line(retries['retryOn'], 80)}" if retries.get("retryOn") else ""))
            if route.get("fault"):
                line += " fault=" + ",".join(sorted(route["fault"]))  # delay / abort injected
            lines.append(line)
    return lines


def _policy_text(policy):
    policy = policy or {}
    parts = []
    tls = (policy.get("tls") or {}).get("mode")
    if tls:
        parts.append(f"tls={tls}")
    lb = policy.get("loadBalancer") or {}
    if lb.get("simple"):
        parts.append(f"loadBalancer={lb['simple']}")
    outlier = policy.get("outlierDetection") or {}
    if outlier:
        parts.append(f"outlierDetection consecutive5xxErrors={outlier.get('consecutive5xxErrors', '?')}"
                     f" baseEjectionTime={outlier.get('baseEjectionTime', '-')}")
    pool = policy.get("connectionPool") or {}
    if pool:
        parts.append("connectionPool " + one_line(str(pool), 160))
    return " ".join(parts)


def destination_rule_lines(obj, context):
    spec = obj.get("spec") or {}
    lines = [f"  host={one_line(spec.get('host', '?'), 160)}"
             + (f" trafficPolicy: {_policy_text(spec['trafficPolicy'])}" if spec.get("trafficPolicy") else "")]
    for subset in (spec.get("subsets") or [])[:LIST_ITEMS_MAX]:
        if isinstance(subset, dict):
            labels = subset.get("labels") or {}
            line = f"  subset {one_line(subset.get('name', '?'), 60)} labels={selector_text({'matchLabels': labels}, empty='none')}"
            if subset.get("trafficPolicy"):
                line += f" trafficPolicy: {_policy_text(subset['trafficPolicy'])}"
            lines.append(line)
            if labels:
                lines.append(pods_line({"matchLabels": labels}, context.get("pods"), what="  subset pods"))
    return lines
