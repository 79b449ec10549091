"""The get_network_policies digest and the policy semantics under it, on healthy and broken objects.

Policies, pods and Services are real-shaped API JSON; each case checks a line the model would
quote (default-deny in those words, one line per rule, stranded pods, which clients are allowed).
"""

import json

from mcp_kubectl_server.digests import netpol_rules as n
from mcp_kubectl_server.digests.netpol import network_policies_digest
from fixtures.kube_sim.store import CLUSTERS_DIR
from tests.support.timing import fastest


def pod(name, labels, *, ip="10.244.0.9", ports=(("http", 8080),), phase="Running", ns="prod"):
    return n.policy_pod({"metadata": {"name": name, "namespace": ns, "labels": labels},
                          "spec": {"containers": [{"name": "c", "ports": [
                              {"name": pn, "containerPort": pp, "protocol": "TCP"} for pn, pp in ports]}]},
                          "status": {"phase": phase, "podIP": ip}})


def policy(name, *, selector=None, types=("Ingress",), ingress=None, egress=None):
    spec = {"podSelector": {"matchLabels": selector} if selector else {}}
    if types is not None:
        spec["policyTypes"] = list(types)
    if ingress is not None:
        spec["ingress"] = ingress
    if egress is not None:
        spec["egress"] = egress
    return {"metadata": {"name": name, "namespace": "prod"}, "spec": spec}


def service(name, selector, target="http"):
    return {"metadata": {"name": name, "namespace": "prod"},
            "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": target, "protocol": "TCP"}]}}


WEB = [pod("web-1", {"app": "web"}, ip="10.244.0.10"), pod("web-2", {"app": "web"}, ip="10.244.1.10")]
API = [pod("api-1", {"app": "api"}, ip="10.244.0.20")]
JOBS = [pod("batch-1", {"app": "batch"}, ip="10.244.2.30")]
NS = {"metadata": {"name": "prod", "labels": {"kubernetes.io/metadata.name": "prod", "team": "shop"}}}


def digest(policies, pods=WEB + API + JOBS, services=(service("api", {"app": "api"}),), ns=NS):
    return network_policies_digest({"items": list(policies)}, {"items": list(pods)},
                                   {"items": list(services)}, ns, namespace="prod")


def test_no_policy_says_nothing_is_isolated():
    text = digest([])
    assert text == ("no NetworkPolicies in namespace prod: no pod here is isolated, every pod accepts and "
                    "opens any connection the cluster network allows")


def test_default_deny_ingress_is_said_in_those_words_and_strands_every_pod():
    text = digest([policy("default-deny-ingress")])
    lines = text.splitlines()
    assert lines[0] == ("network policies in prod: 1 (1 default-deny); pods isolated for ingress: 4 of 4, "
                        "egress: 0 of 4")
    assert lines[1] == "policy default-deny-ingress: selects every pod in prod (4 pods) types=Ingress"
    assert lines[2].startswith("  default-deny ingress: no ingress rule; every pod of prod is isolated")
    assert ("pod api-1: isolated for ingress (by default-deny-ingress); no rule admits any incoming traffic"
            in lines)
    assert ("service api port 80->http: its pods are isolated for ingress; clients in prod: app=batch (1 pod) "
            "NOT allowed, app=web (2 pods) NOT allowed; from other namespaces or addresses: nothing admitted"
            in lines)


def test_an_allow_rule_admits_its_clients_and_only_them():
    allow = policy("allow-web-to-api", selector={"app": "api"}, ingress=[
        {"from": [{"podSelector": {"matchLabels": {"app": "web"}}}], "ports": [{"protocol": "TCP", "port": 8080}]}])
    text = digest([policy("default-deny-ingress"), allow])
    assert "  ingress rule 1: from pods app=web in prod on TCP/8080" in text
    assert "app=web (2 pods) allowed" in text and "app=batch (1 pod) NOT allowed" in text
    assert "pod api-1:" not in text  # isolated, but a rule admits traffic to it
    assert "pod web-1: isolated for ingress" in text


def test_ports_by_name_and_range_and_a_wrong_port_refuses():
    named = policy("by-name", selector={"app": "api"}, ingress=[{"ports": [{"port": "http"}]}])
    assert "app=web (2 pods) allowed" in digest([named])
    ranged = policy("range", selector={"app": "api"}, ingress=[{"ports": [{"port": 8000, "endPort": 8100}]}])
    assert "on TCP/8000-8100" in digest([ranged]) and "app=web (2 pods) allowed" in digest([ranged])
    wrong = policy("wrong-port", selector={"app": "api"}, ingress=[{"ports": [{"port": 9090}]}])
    assert "app=web (2 pods) NOT allowed" in digest([wrong])
    udp = policy("udp", selector={"app": "api"}, ingress=[{"ports": [{"protocol": "UDP", "port": 8080}]}])
    assert "app=web (2 pods) NOT allowed" in digest([udp])


def test_namespace_selectors_use_the_namespace_labels():
    same = policy("team", selector={"app": "api"}, ingress=[{"from": [
        {"namespaceSelector": {"matchLabels": {"team": "shop"}}, "podSelector": {"matchLabels": {"app": "web"}}}]}])
    text = digest([same])
    assert "ingress rule 1: from pods app=web in namespaces team=shop on every port" in text
    assert "app=web (2 pods) allowed" in text and "app=batch (1 pod) NOT allowed" in text
    assert "app=web (2 pods) NOT allowed" in digest([same], ns=None)  # unread: only the name label is known
    other = policy("nginx", selector={"app": "api"}, ingress=[{"from": [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}]}])
    text = digest([other])
    assert "app=web (2 pods) NOT allowed" in text
    assert ("from other namespaces or addresses: from all pods in namespaces kubernetes.io/metadata.name="
            "ingress-nginx on every port (policy nginx)") in text


def test_cidr_blocks_with_exceptions():
    block = policy("cidr", selector={"app": "api"}, ingress=[{"from": [
        {"ipBlock": {"cidr": "10.244.0.0/16", "except": ["10.244.1.0/24"]}}]}])
    text = digest([block])
    assert "from cidr 10.244.0.0/16 except 10.244.1.0/24 on every port" in text
    assert "app=web (2 pods) partly allowed" in text  # web-2 is in the excepted /24
    assert "app=batch (1 pod) allowed" in text


def test_egress_isolation_of_the_client_blocks_too_and_is_its_own_line():
    deny_out = policy("deny-web-egress", selector={"app": "web"}, types=("Egress",))
    text = digest([deny_out, policy("allow-all-to-api", selector={"app": "api"}, ingress=[{}])])
    assert "  denies all egress to the pods it selects (no egress rule)" in text
    assert "pod web-1: isolated for egress (by deny-web-egress); no rule admits any outgoing traffic" in text
    assert "  ingress rule 1: from anywhere (every source) on every port" in text
    assert "app=web (2 pods) NOT allowed" in text and "app=batch (1 pod) allowed" in text
    dns_only = policy("web-dns", selector={"app": "web"}, types=("Egress",), egress=[
        {"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
         "ports": [{"protocol": "UDP", "port": 53}]}])
    text = digest([dns_only])
    assert ("  egress rule 1: to pods k8s-app=kube-dns in namespaces (every namespace) on UDP/53" in text)
    assert "pod web-1:" not in text  # it has a rule, just not one that reaches api


def test_policy_types_default_from_the_rules():
    assert n.policy_types(policy("x", types=None)) == ["Ingress"]
    assert n.policy_types(policy("x", types=None, egress=[{}])) == ["Ingress", "Egress"]
    assert n.is_deny_all(policy("x", types=("Ingress", "Egress"), egress=[{}]), "ingress")
    assert not n.is_deny_all(policy("x", types=("Ingress", "Egress"), egress=[{}]), "egress")


def test_finished_pods_and_services_of_unisolated_pods_are_left_out():
    only_web = policy("web-only", selector={"app": "web"}, ingress=[{}])
    text = digest([only_web], pods=WEB + API + [pod("old-1", {"app": "api"}, phase="Succeeded")],
                  services=[service("api", {"app": "api"}), service("web", {"app": "web"})])
    assert "pods isolated for ingress: 2 of 3" in text
    assert "service api" not in text and "service web port 80->http" in text


def test_the_planted_cluster_strands_payments_and_admits_frontend_from_ingress_nginx():
    doc = json.loads((CLUSTERS_DIR / "network-policy.json").read_text())
    prod = [o for o in doc["objects"] if (o["metadata"].get("namespace")) == "prod"]
    kind = lambda k: {"items": [o for o in prod if o["kind"] == k]}  # noqa: E731
    ns = next(o for o in doc["objects"] if o["kind"] == "Namespace" and o["metadata"]["name"] == "prod")
    text = network_policies_digest(kind("NetworkPolicy"), {"items": [n.policy_pod(p) for p in kind("Pod")["items"]]},
                                   kind("Service"), ns, namespace="prod")
    assert "(1 default-deny)" in text
    line = next(x for x in text.splitlines() if x.startswith("service payments "))
    assert "app=checkout (2 pods) NOT allowed" in line and line.endswith("nothing admitted")
    assert "ingress rule 1: from all pods in namespaces kubernetes.io/metadata.name=ingress-nginx on TCP/8080" in text


def test_thousands_of_replicas_cost_a_few_checks_and_a_lonely_service_has_no_clients():
    many = [pod(f"web-{i}", {"app": "web"}, ip=f"10.245.{i // 250}.{i % 250}") for i in range(1500)]
    many += [pod(f"api-{i}", {"app": "api"}, ip=f"10.246.{i // 250}.{i % 250}") for i in range(500)]
    allow = policy("allow-web", selector={"app": "api"}, ingress=[
        {"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}])
    seconds, text = fastest(lambda: digest([policy("default-deny-ingress"), allow], pods=many), within=1.0)
    assert seconds < 1.0
    assert "app=web (1500 pods) allowed" in text
    assert "... 1470 more such pod lines" in text  # web pods are stranded; the list is bounded
    alone = digest([policy("default-deny-ingress")], pods=API)
    assert "service api port 80->http: its pods are isolated for ingress; clients in prod: none;" in alone
