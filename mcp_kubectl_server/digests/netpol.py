"""get_network_policies: a namespace's NetworkPolicies, the pods they isolate, who may reach whom.

Four reads (NetworkPolicies, pods, Services, the Namespace for its labels) and one digest:

    network policies in prod: 2 (1 default-deny); pods isolated for ingress: 7 of 7, egress: 0 of 7
    policy default-deny-ingress: selects every pod in prod (7 pods) types=Ingress
      default-deny ingress: no ingress rule; every pod of prod is isolated for ingress and only
      another policy's rule can admit traffic
    policy allow-frontend: selects app=frontend (3 pods) types=Ingress
      ingress rule 1: from all pods in namespaces kubernetes.io/metadata.name=ingress-nginx on TCP/8080
    pod payments-6b9c8d7f5c-dzgp7: isolated for ingress (by default-deny-ingress); no rule admits
      any incoming traffic
    service payments port 80->8080: its pods are isolated for ingress; clients in prod:
      app=checkout (2 pods) NOT allowed, ...; from other namespaces or addresses: nothing admitted

(each entry is one line, wrapped here). Clients are the namespace's own pods, grouped by their
app label; a client must be admitted by the destination's ingress and by its own egress. Other
namespaces' pods are not read (the scope stops at this namespace): what the rules admit from
outside is said as the rules say it.
"""

from mcp_kubectl_server.digests import netpol_rules as n
from mcp_kubectl_server.digests.text import one_line
from mcp_kubectl_server.digests.selectors import selector_text


POLICIES_MAX = 50


POD_LINES_MAX = 30


AUTO_NS_LABEL = "kubernetes.io/metadata.name"  # set on every namespace by the API server


def _policy_lines(policy, pods, namespace):
    md, spec = policy.get("metadata") or {}, policy.get("spec") or {}
    selected = [p for p in pods if n.policy_selects(policy, p)]
    selector = spec.get("podSelector") or {}
    who = (f"every pod in {namespace}" if not selector_text(selector, empty="")
           else selector_text(selector))
    lines = [f"policy {md.get('name', '?')}: selects {who} ({len(selected)} pod"
             f"{'' if len(selected) == 1 else 's'}) types={','.join(n.policy_types(policy))}"]
    for direction in ("ingress", "egress"):
        if n.is_deny_all(policy, direction):
            if not selector_text(selector, empty=""):
                lines.append(f"  default-deny {direction}: no {direction} rule; every pod of {namespace}"
                             f" is isolated for {direction} and only another policy's rule can admit"
                             " traffic")
            else:
                lines.append(f"  denies all {direction} to the pods it selects (no {direction} rule)")
            continue
        for i, rule in enumerate(n.rules(policy, direction), start=1):
            text = f"{direction} rule {i}: {n.rule_line(rule, direction, namespace)}"
            lines.append("  " + one_line(text, 600))
    return lines


def _stranded_lines(policies, pods):
    """A line per pod isolated for a direction by policies none of which has a rule for it."""
    lines = []
    for pod in pods:
        for direction in ("ingress", "egress"):
            found = n.isolating(policies, pod, direction)
            if found and not any(n.rules(p, direction) for p in found):
                names = ",".join(p["metadata"].get("name", "?") for p in found)
                word = "incoming" if direction == "ingress" else "outgoing"
                lines.append(f"pod {pod['name']}: isolated for {direction} (by {names}); no rule admits"
                             f" any {word} traffic")
    if len(lines) > POD_LINES_MAX:
        lines = lines[:POD_LINES_MAX] + [f"... {len(lines) - POD_LINES_MAX} more such pod lines"]
    return lines


def _distinct(pods, *, by_ip):
    """One pod per set of labels and ports (and IP, when a CIDR rule makes it matter): the
    verdict depends on nothing else, so a namespace of thousands of replicas costs a few checks."""
    seen = {}
    for pod in pods:
        key = (tuple(sorted(pod["labels"].items())), tuple(tuple(sorted(p.items(), key=str))
                                                           for p in pod["ports"]), pod["ip"] if by_ip else None)
        seen.setdefault(key, pod)
    return list(seen.values())


def _client_words(policies, clients, matched, target, ns_labels):
    """'app=checkout (2 pods) NOT allowed' for each client group, for one Service port."""
    by_ip = any("ipBlock" in peer for p in policies for d in ("ingress", "egress")
                for rule in n.rules(p, d) for peer in rule.get(n.DIRECTIONS[d][1]) or [])
    groups = {}
    for client in clients:
        groups.setdefault(n.group_of(client), []).append(client)
    dests = _distinct(matched, by_ip=by_ip)
    words = []
    for group, members in sorted(groups.items()):
        pairs = [(c, d) for c in _distinct(members, by_ip=by_ip) for d in dests if c["name"] != d["name"]]
        if not pairs:
            continue
        ok = sum(1 for c, d in pairs if _allowed(policies, c, d, target, ns_labels))
        verdict = "allowed" if ok == len(pairs) else "NOT allowed" if not ok else "partly allowed"
        words.append(f"{group} ({len(members)} pod{'' if len(members) == 1 else 's'}) {verdict}")
    return words


def _allowed(policies, client, dest, target, ns_labels):
    port = n.resolve_port(dest, target)
    if port is None:
        return False
    return (n.admitted(policies, dest, "ingress", client, ns_labels, port)
            and n.admitted(policies, client, "egress", dest, ns_labels, port))


def _outside_words(policies, matched, namespace):
    """What the ingress rules of the policies isolating these pods admit from outside the namespace."""
    found = {p["metadata"].get("name"): p for d in matched for p in n.isolating(policies, d, "ingress")}
    words = []
    for policy in found.values():
        for rule in n.rules(policy, "ingress"):
            peers = rule.get("from") or []
            if not peers or any("ipBlock" in p or "namespaceSelector" in p for p in peers):
                words.append(n.rule_line(rule, "ingress", namespace)
                             + f" (policy {policy['metadata'].get('name', '?')})")
    return "; ".join(words) or "nothing admitted"


def _service_lines(services, policies, pods, namespace, ns_labels):
    lines = []
    for svc in services:
        spec = svc.get("spec") or {}
        selector = spec.get("selector") or {}
        matched = [p for p in pods if selector and all(p["labels"].get(k) == v for k, v in selector.items())]
        if not any(n.isolating(policies, d, "ingress") for d in matched):
            continue
        inside = {p["name"] for p in matched}
        clients = [p for p in pods if p["name"] not in inside]
        for port in spec.get("ports") or []:
            target = port.get("targetPort", port.get("port"))
            if target is None:
                continue
            head = f"service {svc['metadata'].get('name', '?')} port {port.get('port', '?')}->{target}"
            words = _client_words(policies, clients, matched, target, ns_labels)
            lines.append(one_line(f"{head}: its pods are isolated for ingress; clients in {namespace}: "
                                  + (", ".join(words) or "none") + "; from other namespaces or addresses: "
                                  + _outside_words(policies, matched, namespace), 1200))
    return lines


def network_policies_digest(policy_list, pod_list, service_list, namespace_obj, *, namespace):
    """The get_network_policies text from the three API lists and the Namespace (None if unread)."""
    policies = policy_list.get("items") or []
    pods = [p for p in pod_list.get("items") or [] if p.get("phase") not in ("Succeeded", "Failed")]
    if namespace_obj is None:
        ns_labels = {AUTO_NS_LABEL: namespace}
    else:
        ns_labels = (namespace_obj.get("metadata") or {}).get("labels") or {AUTO_NS_LABEL: namespace}
    if not policies:
        return (f"no NetworkPolicies in namespace {namespace}: no pod here is isolated, every pod "
                "accepts and opens any connection the cluster network allows")
    deny = sum(1 for p in policies if not selector_text((p.get("spec") or {}).get("podSelector"), empty="")
               and any(n.is_deny_all(p, d) for d in ("ingress", "egress")))
    counts = {d: sum(1 for pod in pods if n.isolating(policies, pod, d)) for d in ("ingress", "egress")}
    lines = [f"network policies in {namespace}: {len(policies)} ({deny} default-deny); pods isolated for "
             f"ingress: {counts['ingress']} of {len(pods)}, egress: {counts['egress']} of {len(pods)}"]
    for policy in policies[:POLICIES_MAX]:
        lines += _policy_lines(policy, pods, namespace)
    if len(policies) > POLICIES_MAX:
        lines.append(f"... {len(policies) - POLICIES_MAX} more NetworkPolicies not shown")
    lines += _stranded_lines(policies, pods)
    lines += _service_lines(service_list.get("items") or [], policies, pods, namespace, ns_labels)
    return "\n".join(lines)
