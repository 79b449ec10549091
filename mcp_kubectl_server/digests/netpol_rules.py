"""NetworkPolicy semantics over API JSON: which pods a policy isolates, what its rules admit.

A pod is isolated for a direction (ingress or egress) when some policy of its namespace selects
it and lists that direction in its policy types; a connection is then allowed only if a rule of
one of those policies admits it, and only if the client side's egress admits it too. A rule
with no peers admits every source, one with no ports every port; peers are pods (in the
policy's namespace), namespaces (by their labels), both, or CIDR blocks. Pods here are the slim
summaries of `policy_pod` (name, namespace, labels, IP, container ports).
"""

import ipaddress

from mcp_kubectl_server.digests.selectors import selector_matches, selector_text

DIRECTIONS = {"ingress": ("Ingress", "from"), "egress": ("Egress", "to")}
GROUP_KEYS = ("app", "app.kubernetes.io/name", "k8s-app")


def policy_pod(pod):
    """The parts of a pod the policy digest reads (a big namespace is held slim)."""
    md, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    ports = [{"name": p.get("name"), "containerPort": p.get("containerPort"),
              "protocol": p.get("protocol") or "TCP"}
             for c in spec.get("containers") or [] for p in c.get("ports") or []]
    return {"name": md.get("name", "?"), "namespace": md.get("namespace", ""),
            "labels": md.get("labels") or {}, "ip": status.get("podIP"), "ports": ports,
            "phase": status.get("phase")}


def policy_types(policy):
    """The policy types in force: as written, else Ingress (+ Egress when it has egress rules)."""
    spec = policy.get("spec") or {}
    if spec.get("policyTypes"):
        return list(spec["policyTypes"])
    return ["Ingress"] + (["Egress"] if spec.get("egress") else [])


def policy_selects(policy, pod):
    md = policy.get("metadata") or {}
    return pod["namespace"] in ("", md.get("namespace", pod["namespace"])) and \
        selector_matches((policy.get("spec") or {}).get("podSelector") or {}, pod["labels"])


def isolating(policies, pod, direction):
    """The policies that isolate `pod` for `direction` ('ingress' or 'egress')."""
    kind = DIRECTIONS[direction][0]
    return [p for p in policies if kind in policy_types(p) and policy_selects(p, pod)]


def rules(policy, direction):
    return (policy.get("spec") or {}).get(direction) or []


def is_deny_all(policy, direction):
    return DIRECTIONS[direction][0] in policy_types(policy) and not rules(policy, direction)


def _in_block(block, ip):
    try:
        address = ipaddress.ip_address(ip)
        if address not in ipaddress.ip_network(block.get("cidr", ""), strict=False):
            return False
        return not any(address in ipaddress.ip_network(e, strict=False) for e in block.get("except") or [])
    except ValueError:
        return False


def peer_matches(peer, other, other_ns_labels, policy_ns):
    """Does one peer of a rule cover pod `other` (whose namespace has `other_ns_labels`)?"""
    if "ipBlock" in peer:
        return bool(other.get("ip")) and _in_block(peer["ipBlock"], other["ip"])
    ns_sel, pod_sel = peer.get("namespaceSelector"), peer.get("podSelector")
    if ns_sel is None and pod_sel is None:
        return False
    if ns_sel is None:
        in_namespace = other["namespace"] == policy_ns
    else:
        in_namespace = other_ns_labels is not None and selector_matches(ns_sel, other_ns_labels)
    return in_namespace and (pod_sel is None or selector_matches(pod_sel, other["labels"]))


def port_matches(entry, port):
    """One rule port entry against (protocol, number, name) of the port the traffic goes to."""
    protocol, number, name = port
    if (entry.get("protocol") or "TCP") != protocol:
        return False
    want = entry.get("port")
    if want is None:
        return True
    if isinstance(want, str) and not want.isdigit():
        return want == name
    low = int(want)
    high = entry.get("endPort") or low
    return number is not None and low <= number <= high


def rule_admits(rule, direction, other, other_ns_labels, policy_ns, port):
    peers = rule.get(DIRECTIONS[direction][1]) or []
    peer_ok = not peers or any(peer_matches(p, other, other_ns_labels, policy_ns) for p in peers)
    ports = rule.get("ports") or []
    return peer_ok and (not ports or any(port_matches(e, port) for e in ports))


def admitted(policies, pod, direction, other, other_ns_labels, port):
    """True when `pod` is not isolated for `direction`, or a rule of an isolating policy admits
    the traffic with `other` (its source for ingress, its destination for egress) on `port`."""
    found = isolating(policies, pod, direction)
    if not found:
        return True
    return any(rule_admits(rule, direction, other, other_ns_labels, p["metadata"].get("namespace", ""), port)
               for p in found for rule in rules(p, direction))


def resolve_port(pod, target):
    """(protocol, number, name) of a Service target port (number or name) on this pod, or None."""
    named = isinstance(target, str) and not target.isdigit()
    for p in pod["ports"]:
        if (p["name"] == target) if named else (p["containerPort"] == int(target)):
            return p["protocol"], p["containerPort"], p["name"]
    return None if named else ("TCP", int(target), None)  # undeclared: the app may listen anyway


def group_of(pod):
    """The label a client is known by (app=..., else the pod name)."""
    for key in GROUP_KEYS:
        if key in pod["labels"]:
            return f"{key}={pod['labels'][key]}"
    return pod["name"]


def peer_words(peer, policy_ns):
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        excepts = block.get("except") or []
        return f"cidr {block.get('cidr', '?')}" + (f" except {','.join(excepts)}" if excepts else "")
    pods = peer.get("podSelector")
    ns = peer.get("namespaceSelector")
    pod_words = f"pods {selector_text(pods, empty='(all)')}" if pods is not None else "all pods"
    if ns is None:
        return f"{pod_words} in {policy_ns}"
    return f"{pod_words} in namespaces {selector_text(ns, empty='(every namespace)')}"


def port_words(entry):
    port = entry.get("port")
    text = f"{entry.get('protocol') or 'TCP'}/{port if port is not None else 'any'}"
    return text + (f"-{entry['endPort']}" if entry.get("endPort") else "")


def rule_line(rule, direction, policy_ns):
    """One rule as one line: 'from pods app=web in prod; cidr 10.0.0.0/8 on TCP/8080'."""
    word = DIRECTIONS[direction][1]
    peers = rule.get(word) or []
    who = "; ".join(peer_words(p, policy_ns) for p in peers) if peers else "anywhere (every source)" \
        if direction == "ingress" else "anywhere (every destination)"
    ports = rule.get("ports") or []
    return f"{word} {who} on " + (", ".join(port_words(e) for e in ports) if ports else "every port")
