"""get_ingresses digest: each Ingress's class, routes, TLS and address, and every broken link.

    ingresses in prod: 2 (1 with a broken link); IngressClasses: nginx (k8s.io/ingress-nginx, default)
    ingress shop: class=nginx (controller k8s.io/ingress-nginx) address=203.0.113.10 tls=1
      path / (Prefix, host shop.example.com) -> Service frontend:80: 3 ready endpoints
      broken: path /api (Prefix, host shop.example.com) -> Service api:8080: the Service has no
        port 8080 (its ports: 80)
      tls shop.example.com -> Secret shop-tls: not read (...)

(each entry is one line, wrapped here). A route is followed to its Service, the Service's port
(by number or name) and the Service's ready endpoints (from its EndpointSlices); each link that
does not hold is one `broken:` line that names the link and why. The class is checked against
the IngressClasses (cluster-scoped, read only when the server may read them). TLS Secrets are
named only; what their certificates say comes in `certs`, read elsewhere and only when the
operator enabled it (see tools/ingresses.py).
"""

from mcp_kubectl_server.digests.certs import TlsRead, host_covered
from mcp_kubectl_server.digests.text import one_line
from mcp_kubectl_server.digests.services import slice_endpoints

INGRESSES_MAX = 50
PATHS_MAX = 40
DEFAULT_CLASS = "ingressclass.kubernetes.io/is-default-class"
CLASS_ANNOTATION = "kubernetes.io/ingress.class"
EXPIRY_WARNING_DAYS = 14


def class_words(cls):
    md = cls.get("metadata") or {}
    default = ", default" if (md.get("annotations") or {}).get(DEFAULT_CLASS) == "true" else ""
    return f"{md.get('name', '?')} ({(cls.get('spec') or {}).get('controller', '?')}{default})"


def _class_part(ing, classes):
    """(text after 'class=', broken line or None)."""
    md, spec = ing.get("metadata") or {}, ing.get("spec") or {}
    name = spec.get("ingressClassName")
    annotation = (md.get("annotations") or {}).get(CLASS_ANNOTATION)
    if not name and annotation:
        return (f"{one_line(annotation, 60)} (annotation {CLASS_ANNOTATION}, deprecated: the controller"
                " matches it against its own setting, not against an IngressClass)"), None
    if isinstance(classes, str):
        return f"{name or 'none'} (IngressClasses not checked: {classes})", None
    defaults = [c for c in classes if ((c.get("metadata") or {}).get("annotations") or {})
                .get(DEFAULT_CLASS) == "true"]
    if not name:
        if defaults:
            return (f"none (the default class {defaults[0]['metadata'].get('name')} is set only on Ingresses "
                    "created after it was marked default; many controllers skip class-less ones)"), None
        return "none", ("no class: the Ingress names no IngressClass and none is the default, so no"
                        " controller is bound to serve it")
    found = next((c for c in classes if (c.get("metadata") or {}).get("name") == name), None)
    if found is None:
        known = ", ".join(class_words(c) for c in classes) or "none"
        return name, (f"class {name}: IngressClass {name} does not exist (IngressClasses: {known}); no"
                      " controller serves this Ingress, so nothing routes its traffic")
    return f"{name} (controller {(found.get('spec') or {}).get('controller', '?')})", None


def _ports_words(service):
    ports = []
    for p in (service.get("spec") or {}).get("ports") or []:
        ports.append(f"{p.get('port', '?')}" + (f" ({p['name']})" if p.get("name") else ""))
    return ", ".join(ports) or "none"


def backend_check(backend, services, slices):
    """(target text, problem or None, healthy words) for one IngressBackend."""
    if "resource" in (backend or {}):
        res = backend["resource"] or {}
        return (f"{res.get('kind', '?')} {res.get('name', '?')}", None,
                f"a resource backend ({res.get('apiGroup') or 'core'}), not checked")
    svc = (backend or {}).get("service") or {}
    name, port = svc.get("name", "?"), svc.get("port") or {}
    wanted = port.get("number", port.get("name", "?"))
    target = f"Service {name}:{wanted}"
    service = services.get(name)
    if service is None:
        known = ", ".join(sorted(services)[:10]) or "none"
        return target, f"the Service {name} does not exist (Services here: {known})", ""
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return target, None, f"ExternalName Service to {one_line(spec.get('externalName', '?'), 80)}"
    ports = spec.get("ports") or []
    if "number" in port:
        match = next((p for p in ports if p.get("port") == port["number"]), None)
        missing = f"the Service has no port {port['number']} (its ports: {_ports_words(service)})"
    else:
        match = next((p for p in ports if p.get("name") == port.get("name")), None)
        missing = f"the Service has no port named {port.get('name')} (its ports: {_ports_words(service)})"
    if match is None:
        return target, missing, ""
    ready, not_ready = slice_endpoints(slices, name)
    if not ready:
        why = f" ({len(not_ready)} not ready)" if not_ready else ""
        return target, (f"the Service has no ready endpoint{why}: requests get 503 from the controller;"
                        " get_services says why"), ""
    return target, None, f"{len(ready)} ready endpoint{'' if len(ready) == 1 else 's'}"


def _route_lines(ing, services, slices):
    """(lines, broken count) for the rules and the default backend of one Ingress."""
    spec, lines, broken = ing.get("spec") or {}, [], 0
    routes = []
    for rule in spec.get("rules") or []:
        host = rule.get("host") or "*"
        for path in ((rule.get("http") or {}).get("paths") or []):
            where = f"path {path.get('path') or '/'} ({path.get('pathType', '?')}, host {host})"
            routes.append((where, path.get("backend")))
    if spec.get("defaultBackend"):
        routes.append(("default backend", spec["defaultBackend"]))
    if not routes:
        return ["  broken: no rule and no default backend: this Ingress routes nothing"], 1
    for where, backend in routes[:PATHS_MAX]:
        target, problem, words = backend_check(backend, services, slices)
        if problem:
            broken += 1
            lines.append("  " + one_line(f"broken: {where} -> {target}: {problem}", 600))
        else:
            lines.append("  " + one_line(f"{where} -> {target}: {words}", 400))
    if len(routes) > PATHS_MAX:
        lines.append(f"  ... {len(routes) - PATHS_MAX} more paths not shown")
    return lines, broken


def _validity(cert, now):
    if cert.not_after <= now:
        days = (now - cert.not_after).days
        return f"the certificate expired at {cert.not_after:%Y-%m-%dT%H:%M:%SZ} ({days}d ago)", True
    if cert.not_before > now:
        return f"the certificate is not valid before {cert.not_before:%Y-%m-%dT%H:%M:%SZ}", True
    left = (cert.not_after - now).days
    soon = f" (expires in {left}d)" if left < EXPIRY_WARNING_DAYS else ""
    return f"valid until {cert.not_after:%Y-%m-%dT%H:%M:%SZ}{soon}", False


def _tls_line(entry, read, namespace, now):
    """(line, broken) for one spec.tls entry."""
    hosts = [h for h in entry.get("hosts") or [] if isinstance(h, str)]
    head = f"tls {','.join(hosts) or '(no hosts)'}"
    secret = entry.get("secretName")
    if not secret:
        return f"  {head}: no secretName: the controller serves its own default certificate", False
    head += f" -> Secret {secret}"
    if read is None:
        return (f"  {head}: not read (this server reads no Secrets); check it with kubectl get secret"
                f" {secret} -n {namespace}, or enable --read-tls-certificates"), False
    if read.missing:
        return (f"  broken: {head}: the Secret does not exist in {namespace}; the controller serves its"
                " default certificate, which browsers reject"), True
    if read.problem:
        return f"  {head}: {read.problem}", False
    leaf = read.certs[0]
    validity, bad = _validity(leaf, now)
    uncovered = [h for h in hosts if leaf.dns_names and not host_covered(h, leaf.dns_names)]
    words = f"subject {leaf.subject}; issuer {leaf.issuer}; {validity}"
    if uncovered:
        words += f"; it does not cover {', '.join(uncovered)} (it names {', '.join(leaf.dns_names[:6])})"
        bad = True
    if len(read.certs) > 1:
        words += f"; chain of {len(read.certs)} certificates"
        words += "".join(f"; chain certificate {i} ({c.subject}) expired" for i, c in
                         enumerate(read.certs[1:], start=2) if c.not_after <= now)
    return "  " + one_line(f"{'broken: ' if bad else ''}{head}: {words}", 700), bad


def _address(ing):
    lb = ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    addresses = [a.get("ip") or a.get("hostname") for a in lb if a.get("ip") or a.get("hostname")]
    errors = [f"port {p.get('port')}: {p['error']}" for a in lb for p in a.get("ports") or [] if p.get("error")]
    text = ",".join(addresses) or "none"
    return text + (f" (errors: {one_line('; '.join(errors), 200)})" if errors else "")


def ingress_block(ing, *, services, slices, classes, certs, namespace, now):
    """(broken count, lines) for one Ingress."""
    md, spec = ing.get("metadata") or {}, ing.get("spec") or {}
    klass, class_broken = _class_part(ing, classes)
    address = _address(ing)
    tls = spec.get("tls") or []
    lines = [one_line(f"ingress {md.get('name', '?')}: class={klass} address={address} tls={len(tls)}", 500)]
    broken = 0
    if class_broken:
        lines.append("  " + one_line("broken: " + class_broken, 600))
        broken += 1
    if address == "none":
        lines.append("  no load-balancer address: no controller has admitted this Ingress (yet)")
    route_lines, route_broken = _route_lines(ing, services, slices)
    lines += route_lines
    broken += route_broken
    for entry in tls:
        read = None if certs is None else certs.get(entry.get("secretName") or "", TlsRead(problem="not read"))
        line, bad = _tls_line(entry, read, namespace, now)
        lines.append(line)
        broken += bad
    return broken, lines


def ingresses_digest(ingress_list, service_list, slice_list, classes, *, namespace, now, certs=None):
    """The get_ingresses text. classes: the IngressClass list's items, or why they were not read
    (a string); certs: None when TLS Secrets are not read, else {secret name: TlsRead}."""
    ingresses = ingress_list.get("items") or []
    if not ingresses:
        return f"no Ingresses in namespace {namespace}"
    services = {(s.get("metadata") or {}).get("name"): s for s in service_list.get("items") or []}
    slices = slice_list.get("items") or []
    blocks = [ingress_block(i, services=services, slices=slices, classes=classes, certs=certs,
                            namespace=namespace, now=now) for i in ingresses]
    blocks.sort(key=lambda b: b[0] == 0)
    bad = sum(1 for count, _ in blocks if count)
    known = classes if isinstance(classes, str) else ", ".join(class_words(c) for c in classes) or "none"
    lines = [one_line(f"ingresses in {namespace}: {len(ingresses)} ({bad} with a broken link);"
                      f" IngressClasses: {known}", 600)]
    lines += [line for _, block in blocks[:INGRESSES_MAX] for line in block]
    if len(blocks) > INGRESSES_MAX:
        lines.append(f"... {len(blocks) - INGRESSES_MAX} more Ingresses not shown")
    return "\n".join(lines)
