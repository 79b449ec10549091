"""get_ingresses digest on real-shaped objects: healthy routes, and each broken link in one line."""

from datetime import datetime, timedelta, timezone

from fixtures.kube_sim.objects import access as a
from fixtures.kube_sim.objects import core as k
from mcp_kubectl_server.digests.certs import TlsRead, read_pem_certificates
from mcp_kubectl_server.digests.ingresses import ingresses_digest
from fixtures.kube_sim.objects.certs import certificate_pem

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)
NGINX = [a.ingress_class("nginx", "k8s.io/ingress-nginx", default=True)]


def _slice(service, ready=2, not_ready=0):
    eps = [{"addresses": [f"10.0.0.{i}"], "conditions": {"ready": i < ready},
            "targetRef": {"kind": "Pod", "name": f"{service}-{i}"}} for i in range(ready + not_ready)]
    return {"metadata": {"name": f"{service}-x", "labels": {"kubernetes.io/service-name": service}},
            "endpoints": eps}


def _digest(ingresses, services=("frontend", "api"), slices=None, classes=NGINX, certs=None):
    svc = {"items": [k.service("prod", s) for s in services]}
    sl = {"items": slices if slices is not None else [_slice(s) for s in services]}
    return ingresses_digest({"items": ingresses}, svc, sl, classes, namespace="prod", now=NOW, certs=certs)


def _shop(api_port="http", **kw):
    return a.ingress_routes("prod", "shop", class_name=kw.pop("class_name", "nginx"),
                            rules=[("shop.example.com", [("/", "frontend", "http"), ("/api", "api", api_port)])],
                            tls=[(["shop.example.com"], "shop-tls")], address="203.0.113.10", **kw)


def test_a_healthy_ingress_has_every_link_and_no_broken_line():
    text = _digest([_shop()])
    assert text.splitlines()[0] == ("ingresses in prod: 1 (0 with a broken link); IngressClasses: nginx "
                                    "(k8s.io/ingress-nginx, default)")
    assert "ingress shop: class=nginx (controller k8s.io/ingress-nginx) address=203.0.113.10 tls=1" in text
    assert "  path / (Prefix, host shop.example.com) -> Service frontend:http: 2 ready endpoints" in text
    assert "  path /api (Prefix, host shop.example.com) -> Service api:http: 2 ready endpoints" in text
    assert ("tls shop.example.com -> Secret shop-tls: not read (this server reads no Secrets); check it"
            " with kubectl get secret shop-tls -n prod, or enable --read-tls-certificates") in text
    assert "broken" not in text.replace("with a broken link", "")


def test_a_path_to_a_port_the_service_lacks_is_one_broken_line():
    text = _digest([_shop(api_port=8080)])
    assert ("  broken: path /api (Prefix, host shop.example.com) -> Service api:8080: the Service has no"
            " port 8080 (its ports: 80 (http))") in text
    assert text.startswith("ingresses in prod: 1 (1 with a broken link)")
    named = _digest([_shop(api_port="grpc")])
    assert "Service api:grpc: the Service has no port named grpc (its ports: 80 (http))" in named


def test_a_missing_service_and_a_service_without_ready_endpoints():
    text = _digest([_shop()], services=("frontend",))
    assert "broken: path /api (Prefix, host shop.example.com) -> Service api:http: the Service api does not" \
           " exist (Services here: frontend)" in text
    empty = _digest([_shop()], slices=[_slice("frontend"), _slice("api", ready=0, not_ready=2)])
    assert "-> Service api:http: the Service has no ready endpoint (2 not ready): requests get 503" in empty


def test_a_class_that_does_not_exist_and_no_address():
    ing = _shop(class_name="nginx-internal")
    ing["status"] = {"loadBalancer": {}}
    text = _digest([ing])
    assert ("  broken: class nginx-internal: IngressClass nginx-internal does not exist (IngressClasses: "
            "nginx (k8s.io/ingress-nginx, default)); no controller serves this Ingress") in text
    assert "address=none" in text and "no load-balancer address: no controller has admitted" in text


def test_classes_unread_no_class_and_the_deprecated_annotation():
    text = _digest([_shop()], classes="cluster-scoped reads are switched off")
    assert "class=nginx (IngressClasses not checked: cluster-scoped reads are switched off)" in text
    bare = _shop(class_name=None)
    assert "broken: no class: the Ingress names no IngressClass and none is the default" in _digest([bare], classes=[])
    assert "class=none (the default class nginx is set only on Ingresses created after" in _digest([bare])
    bare["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "nginx"}
    assert "class=nginx (annotation kubernetes.io/ingress.class, deprecated" in _digest([bare])


def test_an_ingress_without_routes_and_a_default_backend():
    ing = _shop()
    ing["spec"]["rules"] = []
    assert "broken: no rule and no default backend: this Ingress routes nothing" in _digest([ing])
    ing["spec"]["defaultBackend"] = {"service": {"name": "frontend", "port": {"number": 80}}}
    assert "  default backend -> Service frontend:80: 2 ready endpoints" in _digest([ing])
    ing["spec"]["defaultBackend"] = {"resource": {"apiGroup": "k8s.example.com", "kind": "Bucket", "name": "static"}}
    assert "default backend -> Bucket static: a resource backend (k8s.example.com), not checked" in _digest([ing])


def _certs(**kw):
    fields = dict(subject_cn="shop.example.com", issuer_cn="R11", issuer_o="Let's Encrypt",
                  not_before=NOW - timedelta(days=30), not_after=NOW + timedelta(days=60),
                  dns_names=["shop.example.com"])
    fields.update(kw)
    return {"shop-tls": TlsRead(certs=tuple(read_pem_certificates(certificate_pem(**fields))))}


def test_certificates_valid_expired_not_covering_and_missing():
    ok = _digest([_shop()], certs=_certs())
    assert ("  tls shop.example.com -> Secret shop-tls: subject CN=shop.example.com; issuer CN=R11,O=Let's "
            "Encrypt,C=US; valid until 2027-01-28T12:00:00Z") in ok
    expired = _digest([_shop()], certs=_certs(not_after=NOW - timedelta(days=1)))
    assert "broken: tls shop.example.com -> Secret shop-tls: subject CN=shop.example.com;" in expired
    assert "the certificate expired at 2026-11-28T12:00:00Z (1d ago)" in expired
    soon = _digest([_shop()], certs=_certs(not_after=NOW + timedelta(days=3)))
    assert "(expires in 3d)" in soon and "broken: tls" not in soon
    other = _digest([_shop()], certs=_certs(dns_names=["old.example.com"]))
    assert "broken: tls" in other and "it does not cover shop.example.com (it names old.example.com)" in other
    missing = _digest([_shop()], certs={"shop-tls": TlsRead(missing=True)})
    assert "broken: tls shop.example.com -> Secret shop-tls: the Secret does not exist in prod" in missing
    refused = _digest([_shop()], certs={"shop-tls": TlsRead(problem="not readable by these credentials (403)")})
    assert "tls shop.example.com -> Secret shop-tls: not readable by these credentials (403)" in refused


def test_no_ingresses_and_many_sorted_broken_first():
    assert _digest([]) == "no Ingresses in namespace prod"
    good, bad = _shop(), _shop(api_port=9090)
    bad["metadata"]["name"] = "shop-canary"
    lines = _digest([good, bad]).splitlines()
    assert lines[1].startswith("ingress shop-canary:")


def test_cluster_text_is_redacted_and_squeezed():
    ing = _shop()
    ing["metadata"]["annotations"] = {"kubernetes.io/ingress.class": "nginx\n\x1b[31mpassword=hunter2"}
    ing["spec"].pop("ingressClassName")
    text = _digest([ing])
    assert "hunter2" not in text and "\x1b" not in text
