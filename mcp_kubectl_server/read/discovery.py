"""API discovery: which groups and kinds the cluster serves, and which custom kind a name means.

    GET /api                      -> APIVersions ["v1"]
    GET /apis                     -> APIGroupList [{name, versions, preferredVersion}]
    GET /apis/GROUP/PREFERRED     -> APIResourceList [{name (plural), kind, namespaced,
                                     shortNames, singularName}], for the custom groups only

A group is built-in when Kubernetes itself defines it (BUILTIN_GROUPS); every other group came
with a CustomResourceDefinition or an aggregated API server (KEDA's metrics adapter, say) and is
"custom". `read_discovery(reader)` keeps its answer for CACHE_SECONDS in the reader's cache
(shared by its per-call views), so a run's get_custom_resources calls discover once.
`resolve_kind(discovery, text)` matches a Kind, a plural, a singular or a short name, any of
them optionally followed by .GROUP, case-insensitively; more than one match or none is a
KindError whose message lists the candidates. `custom_paths` gives the kubectl proxy the read
paths of the kinds resolved (proxy.py's allow-list grows by exactly those).
"""

import re
import time
from collections import namedtuple

from mcp_kubectl_server.read.errors import ReadError

BUILTIN_GROUPS = frozenset({
    "", "admissionregistration.k8s.io", "apiextensions.k8s.io", "apiregistration.k8s.io", "apps",
    "authentication.k8s.io", "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io",
    "coordination.k8s.io", "discovery.k8s.io", "events.k8s.io", "extensions", "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io", "metrics.k8s.io", "networking.k8s.io", "node.k8s.io", "policy",
    "rbac.authorization.k8s.io", "resource.k8s.io", "scheduling.k8s.io", "storage.k8s.io",
    "storagemigration.k8s.io"})
# Cluster-scoped custom kinds get_custom_resources reads, each only by name: (group, plural).
CLUSTER_CUSTOM = frozenset({("cert-manager.io", "clusterissuers")})
CACHE_SECONDS = 60.0
GROUPS_MAX = 200  # a cluster with more custom groups than this is listed in part
_NAME = r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?"
_PLURAL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_VERSION = re.compile(r"^v[0-9a-z]+$")
_BUILTIN_NAMES = {f"{kind}{plural}" for kind in (
    "pod", "deployment", "replicaset", "statefulset", "daemonset", "job", "cronjob", "service",
    "configmap", "secret", "ingress", "networkpolicy", "node", "namespace", "event",
    "horizontalpodautoscaler", "persistentvolumeclaim", "serviceaccount", "role", "rolebinding")
    for plural in ("", "s")} | {"hpa", "svc", "po", "deploy", "cm", "pvc", "ing", "netpol", "secrets"}

ApiKind = namedtuple("ApiKind", "group version plural kind namespaced short_names singular")
# builtin: [(group, preferred version)]; custom: [ApiKind]; failed: [(group/version, why)]
Discovery = namedtuple("Discovery", "builtin custom failed")


class KindError(Exception):
    """A kind that names no custom kind, or more than one; the message lists the candidates."""


def is_builtin(group):
    return group in BUILTIN_GROUPS


def read_discovery(reader, *, now=time.monotonic):
    """The cluster's groups and custom kinds (ReadError when /apis cannot be read)."""
    cache = getattr(reader, "cache", None)
    kept = cache.get("discovery") if cache is not None else None
    if kept is not None and now() - kept[0] < CACHE_SECONDS:
        return kept[1]
    groups = reader.get_json("/apis").get("groups") or []
    builtin, custom, failed = [("", "v1")], [], []
    for group in groups[:GROUPS_MAX] if isinstance(groups, list) else []:
        name = group.get("name") if isinstance(group, dict) else None
        version = ((group.get("preferredVersion") or {}).get("version") if name else None) or ""
        if not isinstance(name, str) or not re.fullmatch(_NAME, name) or not _VERSION.match(version):
            continue
        if is_builtin(name):
            builtin.append((name, version))
            continue
        try:
            listed = reader.get_json(f"/apis/{name}/{version}").get("resources") or []
        except ReadError as exc:  # an aggregated API whose server is down answers 503 here
            failed.append((f"{name}/{version}", str(exc)))
            continue
        custom += [kind for kind in map(lambda r: _kind(name, version, r), listed) if kind]
    found = Discovery(builtin, custom, failed)
    if cache is not None:
        cache["discovery"] = (now(), found)
    return found


def _kind(group, version, resource):
    if not isinstance(resource, dict) or not _PLURAL.match(str(resource.get("name", ""))):
        return None  # subresources (applications/status) and malformed entries
    short = [s for s in resource.get("shortNames") or [] if isinstance(s, str)]
    return ApiKind(group, version, resource["name"], str(resource.get("kind", "")),
                   bool(resource.get("namespaced")), tuple(short), str(resource.get("singularName") or ""))


def resolve_kind(discovery, text):
    """The one custom kind `text` names (KindError otherwise, listing the candidates)."""
    wanted = text.strip().lower()
    name, _, group = wanted.partition(".")
    matches = [k for k in discovery.custom
               if name in (k.kind.lower(), k.plural, k.singular, *k.short_names)
               and (not group or k.group == group)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise KindError(f"kind {text!r} is ambiguous: it names " + ", ".join(
            f"{k.kind} ({k.plural}.{k.group})" for k in matches) + "; name one as PLURAL.GROUP")
    if group in BUILTIN_GROUPS - {""} or (not group and name in _BUILTIN_NAMES):
        raise KindError(f"{text!r} is a built-in kind, not a custom one: use the tool for it "
                        "(get_pods, get_workloads, get_services, get_config, get_network_policies, ...)")
    served = sorted({f"{k.kind} ({k.plural}.{k.group})" for k in discovery.custom})
    listed = ", ".join(served[:40]) + (f", ... ({len(served)} in all)" if len(served) > 40 else "")
    raise KindError(f"no custom kind matches {text!r}; " + (
        f"the custom kinds this cluster serves: {listed}" if served else
        "this cluster serves no custom kinds (get_api_resources lists its API groups)"))


def custom_paths(kinds, ns, *, cluster_scoped):
    """The kubectl proxy's --accept-paths parts for these custom kinds (`ns` the alternation of
    the allowed namespaces): /apis/GROUP/VERSION/namespaces/NS/PLURAL[/NAME] of the namespaced
    ones, GET by name of the few cluster-scoped ones CLUSTER_CUSTOM lists (with cluster reads)."""
    parts, by_group = [], {}
    for kind in kinds:
        if not (re.fullmatch(_NAME, kind.group) and _VERSION.match(kind.version) and _PLURAL.match(kind.plural)):
            continue  # only DNS names become part of a regex
        if kind.namespaced:
            by_group.setdefault((kind.group, kind.version), set()).add(kind.plural)
        elif cluster_scoped and (kind.group, kind.plural) in CLUSTER_CUSTOM:
            parts.append(rf"^/apis/{_escape(kind.group)}/{kind.version}/{kind.plural}/{_NAME}$")
    for (group, version), plurals in sorted(by_group.items()):
        parts.append(rf"^/apis/{_escape(group)}/{version}/namespaces/{ns}/({'|'.join(sorted(plurals))})"
                     rf"(/{_NAME})?$")
    return parts


def _escape(text):
    return text.replace(".", r"\.")
