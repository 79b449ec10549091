"""Namespace scope for PromQL that the model writes: a query is confined to one namespace before
Prometheus sees it, and its answer is checked after.

    scope_query('sum by (pod) (rate(http_requests_total{code=~"5.."}[5m]))', "prod")
      -> 'sum by (pod) (rate(http_requests_total{code=~"5..", namespace="prod"}[5m]))'

scope_query parses the query (promql_parse: Prometheus 2.42's grammar and type rules) and adds
`namespace="NS"` to every vector and range selector: bare `{__name__=...}` ones, those inside
subqueries, function arguments and both sides of every operator, so that no selector can read
another namespace's series. It refuses, rather than rewrites, a query that already constrains
`namespace` in any other way (`namespace=~"prod|kube-system"`, `namespace!="prod"`), and one
that could forge the label: label_replace or label_join writing `namespace`, count_values
naming it. check_series then checks the answer: every series must carry a `namespace` label in
scope. An aggregation that dropped the label, a scalar and a string are refused with the way to
keep it (`by (namespace, ...)`).
"""

from .promql_ast import Aggregate, Call, Matcher, Paren, String, VectorSelector, render, walk
from .promql_lex import PromQLError
from .promql_parse import parse

__all__ = ["PromQLError", "parse", "scope_query", "check_series", "render"]

LABEL = "namespace"
# the functions whose output label a string argument names: name -> that argument's index
_LABEL_WRITERS = {"label_replace": 1, "label_join": 1}
_KEEP = (f"keep the {LABEL} label in the result, e.g. sum by ({LABEL}, pod) (rate(x[5m])) "
         "instead of sum(rate(x[5m]))")


def scope_query(text, namespace):
    """The query with namespace="NS" on every selector, rendered canonically; PromQLError when
    it does not parse, constrains the namespace otherwise, or could forge the label."""
    if not isinstance(namespace, str) or not namespace:
        raise PromQLError("a namespace is required to scope a PromQL query")
    tree = parse(text)
    for node in walk(tree):
        if isinstance(node, VectorSelector):
            _scope_selector(node, namespace)
        elif isinstance(node, Call) and node.func in _LABEL_WRITERS:
            if _string_argument(node.args[_LABEL_WRITERS[node.func]]) in (LABEL, None):
                raise PromQLError(
                    f"{node.func}() may not write the {LABEL!r} label: it could present one "
                    f"namespace's series as another's. Write the result into a label of "
                    f"another name (e.g. \"src_{LABEL}\").")
        elif isinstance(node, Aggregate) and node.op == "count_values":
            if _string_argument(node.param) in (LABEL, None):
                raise PromQLError(f"count_values() may not name its output label {LABEL!r}: "
                                  "choose another label name (e.g. \"value\").")
    return render(tree)


def _scope_selector(node, namespace):
    for matcher in node.matchers:
        if matcher.name != LABEL:
            continue
        if matcher.op != "=" or matcher.value != namespace:
            shown = render(VectorSelector(node.name, node.matchers))
            raise PromQLError(
                f"this query may read namespace {namespace!r} only, and the selector {shown} "
                f"constrains {LABEL!r} otherwise ({LABEL}{matcher.op}...). Leave {LABEL} out of "
                f"the query: the server adds {LABEL}=\"{namespace}\" to every selector itself.")
    if not any(m.name == LABEL for m in node.matchers):
        node.matchers.append(Matcher(LABEL, "=", namespace))


def _string_argument(node):
    """The value of a string argument, through parentheses (as Prometheus reads it); None
    when it is not a string literal (the type check leaves none such: refused all the same)."""
    while isinstance(node, Paren):
        node = node.expr
    return node.value if isinstance(node, String) else None


def check_series(result, namespaces):
    """None when every series of a Prometheus answer carries a namespace label in
    `namespaces`; PromQLError otherwise. `result` is the answer's `data` ({"resultType",
    "result"}), the whole answer ({"status", "data"}), or a list of series (their label sets,
    as /api/v1/series gives them, or {"metric": ...} items)."""
    allowed = {namespaces} if isinstance(namespaces, str) else set(namespaces)
    if isinstance(result, dict) and "resultType" not in result and "data" in result:
        result = result["data"]
    if isinstance(result, dict):
        kind = result.get("resultType")
        if kind in ("scalar", "string"):
            raise PromQLError(f"the query returns a {kind}, which carries no {LABEL} label, so "
                              f"it cannot be shown: return an instant vector instead and "
                              f"{_KEEP}")
        if kind not in ("vector", "matrix"):
            raise PromQLError(f"Prometheus answered with a result of type {kind!r}, which "
                              "this server does not read")
        result = result.get("result")
    if not isinstance(result, list):
        raise PromQLError("Prometheus's answer holds no list of series")
    for item in result:
        labels = item.get("metric", item) if isinstance(item, dict) else None
        if not isinstance(labels, dict):
            raise PromQLError("Prometheus's answer holds a series without labels")
        if LABEL not in labels:
            raise PromQLError(f"the query's result has a series without a {LABEL} label (an "
                              f"aggregation or function dropped it), so it cannot be shown: "
                              f"{_KEEP}")
        if labels[LABEL] not in allowed:
            raise PromQLError(f"the query's result has a series of a {LABEL} outside this "
                              "query's scope; nothing of it is shown")
