"""Namespace scope, proven by the loop for any MCP server's tools.

The loop cannot see inside a server, so a call runs only when its arguments show that it stays
in the namespaces in scope. `scope_of(input_schema)` reads, from a tool's top-level properties:

    namespace keys        namespace, namespaces, ns, namespace_name (any case; `-`, `_` ignored)
    all-namespaces flags  all_namespaces, allNamespaces, all-namespaces, A, cluster_wide, ...

A tool with no namespace key is not offered to the model (`UNSCOPED_REASON`) unless the operator
names it. `check_scope(arguments, scope, namespaces)` then proves each call, in this order:

    a namespace value that is not one of the allowed names (a list: each one)  -> out_of_scope
    an all-namespaces flag, at any depth, with any value but false             -> out_of_scope
    a string value, at any depth, shaped like a command-line flag (-A, x --y)  -> out_of_scope
    a string value that selects on a namespace (metadata.namespace=x, a
      selector or filter argument that mentions a namespace at all)            -> out_of_scope
    a kind/resource argument naming a cluster-scoped kind (Node, Namespace,
      ClusterRole, ...) or Secret, which a namespace argument cannot bound     -> out_of_scope
    the namespace left out: filled in when exactly one is allowed, else        -> namespace_required
    an all-namespaces flag the schema has and the call left out                -> filled in as false

What filled in is returned, so the audit can say so. What the loop cannot prove is that a server
honours its own namespace argument; that is the server's part (ours checks it again).
"""

import re
from dataclasses import dataclass, field

_NAMESPACE_KEYS = {"namespace", "namespaces", "ns", "namespacename"}
_ALL_FLAGS = {"a", "allns", "cluster", "clusterwide", "clusterscope", "clusterscoped"}
_ALL_FLAG = re.compile(r"(?:all|any|every|across)\w*namespace")
_FLAG_LIKE = re.compile(r"^\s*-|\s-{1,2}[A-Za-z]")
_NAMESPACE_CLAUSE = re.compile(r"namespace\w*\s*(?:[=!]=?|\s(?:not)?in\b)", re.IGNORECASE)
_SELECTOR_KEY = re.compile(r"selector|filter|query", re.IGNORECASE)
_KIND_KEYS = {"kind", "kinds", "resource", "resources", "resourcetype", "resourcekind"}
# Kinds a namespace argument does not bound (cluster-scoped), and Secret, which no tool may read.
_UNBOUNDED_KINDS = {"namespace", "node", "persistentvolume", "clusterrole", "clusterrolebinding",
                    "customresourcedefinition", "storageclass", "priorityclass", "apiservice",
                    "certificatesigningrequest", "mutatingwebhookconfiguration",
                    "validatingwebhookconfiguration", "ingressclass", "runtimeclass", "csidriver",
                    "csinode", "volumeattachment", "secret"}
UNSCOPED_REASON = ("no namespace argument: the loop cannot prove its calls stay in scope "
                   "(offer it anyway with --allow-unscoped-tool NAME)")


def _norm(key):
    return re.sub(r"[\s_-]", "", str(key)).lower()


def is_namespace_key(key):
    """True for an argument name that names the namespace(s) a call reads."""
    return _norm(key) in _NAMESPACE_KEYS


def is_all_namespaces_flag(key):
    """True for an argument name that could widen a call to every namespace."""
    norm = _norm(key)
    return norm in _ALL_FLAGS or bool(_ALL_FLAG.match(norm))


@dataclass(frozen=True)
class Scope:
    """How one tool's calls name their namespace: keys, which take lists, all-namespaces flags."""
    keys: tuple = ()
    list_keys: frozenset = frozenset()
    all_flags: tuple = ()


@dataclass
class ScopeCheck:
    """One call's proof: the arguments to run, and a refusal (decision, text, violation) or None."""
    arguments: dict
    refusal: tuple = None
    filled: dict = field(default_factory=dict)


def scope_of(input_schema):
    """The Scope a tool's input schema declares (keys empty: it has no namespace argument)."""
    properties = (input_schema or {}).get("properties") if isinstance(input_schema, dict) else {}
    properties = properties if isinstance(properties, dict) else {}
    keys = tuple(k for k in properties if is_namespace_key(k))
    lists = frozenset(k for k in keys if isinstance(properties[k], dict)
                      and properties[k].get("type") == "array")
    return Scope(keys, lists, tuple(k for k in properties if is_all_namespaces_flag(k)))


def _walk(value):
    """(key, under a selector-like key, value) for every value at any depth; a list item keeps
    its list's key. Iterative, so a model's deeply nested arguments cannot exhaust the stack."""
    stack = [("", False, value)]
    while stack:
        key, selecting, value = stack.pop()
        if isinstance(value, dict):
            for k, v in value.items():
                inner = selecting or bool(_SELECTOR_KEY.search(str(k)))
                yield str(k), inner, v
                stack.append((str(k), inner, v))
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, (dict, list)):
                    stack.append((key, selecting, item))
                else:
                    yield key, selecting, item


def _unbounded_kind(value):
    """`nodes`, `v1/Node`, `clusterroles.rbac.authorization.k8s.io` -> True."""
    name = value.strip().lower().rsplit("/", 1)[-1].split(".", 1)[0]
    return name in _UNBOUNDED_KINDS or (name.endswith("s") and name[:-1] in _UNBOUNDED_KINDS) \
        or (name.endswith("es") and name[:-2] in _UNBOUNDED_KINDS)


def _show(value, limit=80):
    """A value for a refusal: scalars quoted and cut, containers by type (never a deep repr)."""
    if isinstance(value, (dict, list)):
        return f"<{type(value).__name__}>"
    return repr(value)[:limit]


def _bad_namespace(value, namespaces):
    values = value if isinstance(value, list) else [value]
    if not values:
        return "an empty namespace list"
    for item in values:
        if not isinstance(item, str) or item not in namespaces:
            return f"namespace {_show(item)}"
    return None


def _reach(arguments, namespaces):
    """Why some value reaches around the scope, or None."""
    for key, selecting, value in _walk(arguments):
        if is_namespace_key(key):
            bad = _bad_namespace(value, namespaces)
            if bad:
                return f"{bad} is out of scope for this run"
        elif is_all_namespaces_flag(key) and value is not False:
            return (f"{key}={_show(value, 40)}: calls across all namespaces are not allowed (it "
                    "must be false)")
        if not isinstance(value, str):
            continue
        if _norm(key) in _KIND_KEYS and _unbounded_kind(value):
            return (f"{key}={_show(value)} is a kind a namespace cannot bound (cluster-scoped, or "
                    "a Secret)")
        if _FLAG_LIKE.search(value):
            return f"{key}={_show(value)} looks like a command-line flag"
        if _NAMESPACE_CLAUSE.search(value) or (selecting and "namespace" in value.lower()):
            return f"{key}={_show(value)} selects on a namespace"
    return None


def check_scope(arguments, scope, namespaces, *, tool):
    """Prove one call stays in `namespaces`; fill in what exactly one answer allows."""
    allowed = ", ".join(namespaces)
    reach = _reach(arguments, namespaces)
    if reach:
        return ScopeCheck(arguments, ("out_of_scope", f"refused: {reach}. Namespaces in scope: "
                                      f"{allowed}. Do not ask again; report it if you think it "
                                      "matters.", True))
    filled = {}
    if scope.keys and not any(k in arguments for k in scope.keys):
        if len(namespaces) != 1:
            return ScopeCheck(arguments, ("namespace_required", f"refused: {tool} without "
                                          f"{scope.keys[0]} could read every namespace. Call it "
                                          f"again with {scope.keys[0]} set to one of: {allowed}.",
                                          False))
        key = scope.keys[0]
        filled[key] = list(namespaces) if key in scope.list_keys else namespaces[0]
    filled.update({flag: False for flag in scope.all_flags if flag not in arguments})
    return ScopeCheck(dict(arguments, **filled), None, filled)
