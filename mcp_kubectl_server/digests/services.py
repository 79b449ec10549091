"""get_services: every Service of a namespace with its endpoints and the pods its selector matches.

Three reads (Services, EndpointSlices, pods of the namespace) and one digest, one block per
Service, those with a problem first:

    payments type=ClusterIP cluster-ip=10.96.140.73 ports=80/TCP->http selector=app=payments-api
      endpoints: ready=0 not-ready=0; pods matching the selector: 0 (0 ready)
      problem: selector app=payments-api matches no pod in prod (pods here have app=checkout, ...)

Endpoints come from the EndpointSlices (label kubernetes.io/service-name), the pod counts from
the pods themselves, so a disagreement between the two shows too. A target port, by number or
by name, that no container of the matched pods declares is a problem line of its own.
"""

from mcp_kubectl_server.digests.text import one_line


SERVICES_MAX = 100


SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def service_selects(selector, labels):
    """A Service selector (plain map) matches when every key has the same value on the pod."""
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def pod_ready(pod):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _ports_text(ports):
    out = []
    for p in ports or []:
        front = f"{p.get('port', '?')}" + (f":{p['nodePort']}" if p.get("nodePort") else "")
        out.append(f"{front}/{p.get('protocol', 'TCP')}->{p.get('targetPort', p.get('port', '?'))}")
    return ",".join(out) or "none"


def _selector_text(selector):
    return ",".join(f"{k}={v}" for k, v in sorted((selector or {}).items()))


def slice_endpoints(slices, service_name):
    """(ready, not_ready) endpoint names or addresses from the Service's EndpointSlices."""
    ready, not_ready = {}, {}
    for sl in slices:
        if ((sl.get("metadata") or {}).get("labels") or {}).get(SERVICE_NAME_LABEL) != service_name:
            continue
        for ep in sl.get("endpoints") or []:
            who = (ep.get("targetRef") or {}).get("name") or ",".join(ep.get("addresses") or [])
            # A nil `ready` means unknown, which the API says consumers should take as ready.
            is_ready = (ep.get("conditions") or {}).get("ready") is not False
            (ready if is_ready else not_ready)[who] = True
    return list(ready), [n for n in not_ready if n not in ready]


def container_ports(pods):
    """{(name or None, number)} declared by the containers of these pods."""
    return {(p.get("name"), p.get("containerPort"))
            for pod in pods for c in (pod.get("spec") or {}).get("containers") or []
            for p in c.get("ports") or []}


def _port_problems(service, matched):
    declared = container_ports(matched)
    shown = ", ".join(f"{n}={num}" if n else str(num) for n, num in sorted(declared, key=str)) or "none"
    problems = []
    for p in (service.get("spec") or {}).get("ports") or []:
        target = p.get("targetPort", p.get("port"))
        if target is None or isinstance(target, bool):
            continue
        if isinstance(target, str) and not target.isdigit():
            if not any(name == target for name, _ in declared):
                problems.append(f"target port {target} (a port name) matches no container port of the "
                                f"selected pods (they declare: {shown}); no traffic reaches them on it")
        elif not any(num == int(target) for _, num in declared):
            problems.append(f"target port {target} matches no declared container port of the selected "
                            f"pods (they declare: {shown}); it works only if the app listens there anyway")
    return problems


def _label_hint(selector, pods):
    keys = sorted(selector or {})
    values = sorted({f"{k}={(p['metadata'].get('labels') or {})[k]}" for p in pods for k in keys
                     if k in (p["metadata"].get("labels") or {})})
    if not values:
        return f"no pod here has the label key{'s' if len(keys) > 1 else ''} {', '.join(keys)}"
    return "pods here have " + ", ".join(values[:8]) + (" ..." if len(values) > 8 else "")


def service_block(service, slices, pods, namespace):
    """(problem_count, lines) for one Service."""
    md, spec = service.get("metadata") or {}, service.get("spec") or {}
    name, selector = md.get("name", "?"), spec.get("selector") or {}
    head = (f"{name} type={spec.get('type', 'ClusterIP')} cluster-ip={spec.get('clusterIP') or 'none'}"
            f" ports={_ports_text(spec.get('ports'))}")
    if spec.get("type") == "ExternalName":
        return 0, [head + f" external-name={one_line(spec.get('externalName', ''), 100)}"]
    ready, not_ready = slice_endpoints(slices, name)
    lines = [head + f" selector={_selector_text(selector) or 'none'}"]
    endpoints = f"  endpoints: ready={len(ready)} not-ready={len(not_ready)}"
    if not_ready:
        endpoints += " (not ready: " + ", ".join(not_ready[:5]) + (" ..." if len(not_ready) > 5 else "") + ")"
    if not selector:
        return 0, lines + [endpoints + "; no selector: its endpoints are managed by hand"]
    live = [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
    matched = [p for p in live if service_selects(selector, p["metadata"].get("labels") or {})]
    n_ready = sum(1 for p in matched if pod_ready(p))
    lines.append(endpoints + f"; pods matching the selector: {len(matched)} ({n_ready} ready)")
    problems = []
    if not matched:
        problems.append(f"selector {_selector_text(selector)} matches no pod in {namespace} "
                        f"({_label_hint(selector, live)}); the Service has no endpoint, so "
                        "connections to it are refused")
    else:
        if not n_ready:
            problems.append(f"none of the {len(matched)} matched pods is Ready, so the Service "
                            "has no ready endpoint")
        problems += _port_problems(service, matched)
    return len(problems), lines + [f"  problem: {p}" for p in problems]


def services_digest(service_list, slice_list, pod_list, *, namespace):
    """The get_services text from the three API lists (dicts with `items`)."""
    services = service_list.get("items") or []
    slices, pods = slice_list.get("items") or [], pod_list.get("items") or []
    if not services:
        return f"no Services in namespace {namespace}"
    blocks = [service_block(s, slices, pods, namespace) for s in services]
    blocks.sort(key=lambda b: b[0] == 0)  # problems first, otherwise in the API's order
    bad = sum(1 for count, _ in blocks if count)
    head = f"services in {namespace}: {len(services)} ({bad} with a problem)"
    shown = blocks[:SERVICES_MAX]
    lines = [head] + [line for _, block in shown for line in block]
    if len(blocks) > SERVICES_MAX:
        lines.append(f"... {len(blocks) - SERVICES_MAX} more Services not shown")
    return "\n".join(lines)


def service_pod(pod):
    """The parts of a pod the service and storage digests read (a big namespace is held slim)."""
    md, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    return {"metadata": {"name": md.get("name", "?"), "labels": md.get("labels") or {}},
            "spec": {"containers": [{"ports": c.get("ports") or []} for c in spec.get("containers") or []],
                     "volumes": [v for v in spec.get("volumes") or []
                                 if "persistentVolumeClaim" in v or "ephemeral" in v]},
            "status": {"phase": status.get("phase"),
                       "conditions": [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]}}
