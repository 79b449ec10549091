"""The custom-resource tools: get_api_resources (discovery) and get_custom_resources (the objects
of one custom kind, resolved through discovery); the digests are digests/custom/.

A family module (see registry.py). Reads:

    get_api_resources     /apis, /apis/GROUP/VERSION of each custom group (read/discovery.py)
    get_custom_resources  the same discovery, then /apis/GROUP/VERSION/namespaces/NS/PLURAL[/NAME];
                          for its digest: pods (selectors), HorizontalPodAutoscalers (KEDA),
                          the Issuer or ClusterIssuer a Certificate names, events about one object

get_api_resources is cluster-scoped (namespaced=False: discovery belongs to no namespace) and says
nothing about any object. get_custom_resources reads namespaced kinds in the allowed namespaces
only, and of the cluster-scoped custom kinds only a ClusterIssuer, by name. The proxy's allow-list
opens a custom kind's paths once discovery has resolved it (Reader.allow_custom).
"""

import re

from mcp_kubectl_server.digests.custom import custom_resources_digest
from mcp_kubectl_server.digests.custom.apis import api_resources_digest
from mcp_kubectl_server.digests.custom.common import now_utc
from mcp_kubectl_server.digests.text import one_line
from mcp_kubectl_server.read.discovery import CLUSTER_CUSTOM, KindError, read_discovery, resolve_kind
from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.tools.spec import NAMESPACE, Tool
from mcp_kubectl_server.validate import DNS1123_SUBDOMAIN

KIND_PATTERN = r"^[A-Za-z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_KIND_RE = re.compile(KIND_PATTERN)


def check_kind(field, value):
    if not isinstance(value, str) or len(value) > 253 or not _KIND_RE.fullmatch(value):
        return (f"{field}: must be a Kind (ScaledObject), a plural or short name, optionally with its "
                f"group (applications.argoproj.io), got {value!r:.60}")
    return None


ORDER = 85  # after the namespaced built-in tools, before the cluster-wide views
TOOLS = [
    Tool("get_api_resources", "API groups and custom kinds",
         "The API groups the cluster serves (discovery): built-in groups on one line, and every custom "
         "group in full, each kind with its plural, whether it is namespaced and its short names, plus "
         "the operators those groups reveal. Answers 'is KEDA installed', 'is there a service mesh', "
         "'which GitOps tool'. Use it when the pods look fine but traffic, scaling, certificates or "
         "deployments misbehave, before get_custom_resources.",
         {}, (), namespaced=False),
    Tool("get_custom_resources", "Custom resources of one kind",
         "The objects of one custom kind in a namespace: name, age, generation against "
         "observedGeneration, every status condition, owner, and a digest of the spec. Written digests "
         "for Argo CD Application; Flux Kustomization, HelmRelease, GitRepository, HelmRepository; KEDA "
         "ScaledObject (with any other HorizontalPodAutoscaler on the same target) and ScaledJob; Istio "
         "AuthorizationPolicy (and the pods it applies to), PeerAuthentication, VirtualService, "
         "DestinationRule; cert-manager Certificate (expiry, renewal, its issuer's readiness), Issuer, "
         "ClusterIssuer (by name); Chaos Mesh experiments and Schedule (the pods they hit). Any other "
         "kind gets its spec and status flattened. Kinds that hold secrets show names and references "
         "only. With name: one object in full, with its events.",
         {"namespace": NAMESPACE,
          "kind": {"type": "string", "pattern": KIND_PATTERN, "maxLength": 253,
                   "description": "A Kind (ScaledObject), plural (scaledobjects), short name (so), or "
                                  "any of them with the group (authorizationpolicies.security.istio.io)."},
          "name": {"type": "string", "pattern": DNS1123_SUBDOMAIN, "maxLength": 253,
                   "description": "One object's exact name: it is shown in full, with its events."}},
         ("namespace", "kind"), checks={"kind": check_kind}),
]


def get_api_resources(reader, args):
    discovery = read_discovery(reader)
    return api_resources_digest(discovery, cluster_scoped_reads=getattr(reader, "cluster_scoped", True))


def _resolve(reader, text, name):
    try:
        kind = resolve_kind(read_discovery(reader), text)
    except KindError as exc:
        raise ReadError(str(exc), status=404) from None
    if not kind.namespaced:
        if (kind.group, kind.plural) not in CLUSTER_CUSTOM:
            raise ReadError(f"{kind.kind} ({kind.plural}.{kind.group}) is cluster-scoped: this tool reads "
                            "cluster-scoped custom kinds only where it was written for them (a cert-manager "
                            "ClusterIssuer, by name)")
        if not name:
            raise ReadError(f"{kind.kind} is cluster-scoped: name the one to read (a Certificate's issuer=...)")
        if not getattr(reader, "cluster_scoped", True):
            raise ReadError("cluster-scoped reads are switched off on this server (--no-cluster-tools)")
    reader.allow_custom([kind])
    return kind


def _path(kind, namespace, name=None):
    base = f"/apis/{kind.group}/{kind.version}"
    base += f"/namespaces/{namespace}/{kind.plural}" if kind.namespaced else f"/{kind.plural}"
    return base + (f"/{name}" if name else "")


def _labels_only(pod):
    meta = pod.get("metadata") or {}
    return {"metadata": {"name": meta.get("name"), "labels": meta.get("labels") or {}}}


def _context(reader, kind, namespace, objects):
    context = {"now": now_utc(), "allowed": tuple(getattr(reader, "namespaces", ()) or (namespace,))}
    if kind.group in ("security.istio.io", "networking.istio.io", "chaos-mesh.org"):
        context["pods"] = _or_text(lambda: reader.list_json(f"/api/v1/namespaces/{namespace}/pods",
                                                            item=_labels_only).get("items") or [])
    if kind.group == "keda.sh":
        context["hpas"] = _or_text(lambda: reader.list_json(
            f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers").get("items") or [])
    if (kind.group, kind.kind) == ("cert-manager.io", "Certificate"):
        context["issuers"] = _issuers(reader, namespace, objects)
    return context


def _or_text(read):
    try:
        return read()
    except ReadError as exc:
        return one_line(exc, 200)


def _issuers(reader, namespace, certificates):
    """(kind, name) -> the Issuer or ClusterIssuer each Certificate names, or why it was not read."""
    served = {(k.group, k.kind): k for k in read_discovery(reader).custom}
    found = {}
    for cert in certificates:
        ref = (cert.get("spec") or {}).get("issuerRef") or {}
        issuer_kind, name = ref.get("kind") or "Issuer", ref.get("name")
        group = ref.get("group") or "cert-manager.io"
        if not name or (issuer_kind, name) in found or group != "cert-manager.io":
            continue  # an external issuer (another group) is named in the digest, not read
        target = served.get((group, issuer_kind))
        if target is None:
            found[(issuer_kind, name)] = f"not read: this cluster serves no {issuer_kind} kind"
        elif not target.namespaced and not getattr(reader, "cluster_scoped", True):
            found[(issuer_kind, name)] = "not read: cluster-scoped reads are switched off on this server"
        else:
            reader.allow_custom([target])
            found[(issuer_kind, name)] = _or_text(lambda: reader.get_json(_path(target, namespace, name)))
    return found


def get_custom_resources(reader, args):
    namespace, name = args["namespace"], args.get("name")
    kind = _resolve(reader, args["kind"], name)
    if name:
        try:
            objects = [reader.get_json(_path(kind, namespace, name))]
        except ReadError as exc:
            if exc.status != 404:
                raise
            objects = []
    else:
        objects = reader.list_json(_path(kind, namespace)).get("items") or []
    events = None
    if name and objects and kind.namespaced:
        events = _or_text(lambda: reader.list_json(f"/api/v1/namespaces/{namespace}/events", {
            "fieldSelector": f"involvedObject.name={name},involvedObject.kind={kind.kind}"}).get("items") or [])
        events = events if isinstance(events, list) else None
    context = _context(reader, kind, namespace, objects)
    return custom_resources_digest(kind, objects, namespace=namespace, context=context, name=name, events=events)


HANDLERS = {"get_api_resources": get_api_resources, "get_custom_resources": get_custom_resources}
