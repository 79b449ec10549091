"""PromQL's type check: the rules Prometheus 2.42 applies to a tree that parsed
(checkAST in promql/parser/parse.go).

Types: instant vector (v), range vector (m), scalar (s), string (S). A function's and an
aggregation's arguments must have their declared types; binary operators take scalars and
instant vectors, set operators (`and` `or` `unless`) vectors only and no grouping; comparisons
between two scalars need `bool`; `bool` goes on comparisons only; vector matching needs two
vectors; a selector sets its metric name once and has a matcher that does not match the empty
string. Regular expressions are checked with Python's `re` where it reads them (RE2 and `re`
differ at the edges; Prometheus has the last word on a regex).
"""

import re

from .promql_ast import (FUNCTIONS, PARAM_TYPES, TYPE_NAMES, Aggregate, Binary, Call,
                         MatrixSelector, Number, Paren, String, Subquery, Unary, VectorSelector)
from .promql_lex import parse_error

COMPARISONS = frozenset(("==", "!=", "<=", "<", ">=", ">"))
SET_OPERATORS = frozenset(("and", "or", "unless"))


def check(node, text):
    """The type of a tree (v m s S); PromQLError at the first rule it breaks."""
    return _Checker(text).check(node)


def matches_empty(matcher):
    """Whether a matcher matches the empty label value; None when `re` cannot read its regex."""
    if matcher.op in ("=", "!="):
        return (matcher.value == "") == (matcher.op == "=")
    try:
        hit = re.fullmatch(matcher.value, "") is not None
    except (re.error, RecursionError, OverflowError):
        return None
    return hit == (matcher.op == "=~")


class _Checker:
    def __init__(self, text):
        self.text = text

    def fail(self, node, message):
        raise parse_error(self.text, node.pos, message)

    def expect(self, node, want, context):
        got = self.check(node)
        if got != want:
            self.fail(node, f"expected type {TYPE_NAMES[want]} in {context}, "
                            f"got {TYPE_NAMES[got]}")

    def check(self, node):
        kind = type(node)
        if kind is VectorSelector:
            self.selector(node)
            return "v"
        if kind is MatrixSelector:
            self.selector(node.selector)
            return "m"
        if kind is Subquery:
            inner = self.check(node.expr)
            if inner != "v":
                self.fail(node, f"subquery is only allowed on instant vector, got "
                                f"{TYPE_NAMES[inner]} instead")
            return "m"
        if kind is Call:
            return self.call(node)
        if kind is Aggregate:
            self.expect(node.expr, "v", "aggregation expression")
            if node.op in PARAM_TYPES:
                self.expect(node.param, PARAM_TYPES[node.op], "aggregation parameter")
            return "v"
        if kind is Binary:
            return self.binary(node)
        if kind is Unary:
            inner = self.check(node.expr)
            if inner not in ("s", "v"):
                self.fail(node, "unary expression only allowed on expressions of type scalar "
                                f"or instant vector, got {TYPE_NAMES[inner]!r}")
            return inner
        if kind is Paren:
            return self.check(node.expr)
        if kind is Number:
            return "s"
        assert kind is String, kind
        return "S"

    def selector(self, node):
        if node.name:
            for m in node.matchers:
                if m.name == "__name__":
                    self.fail(node, f"metric name must not be set twice: {node.name!r} or "
                                    f"{m.value!r}")
            return
        if all(matches_empty(m) is True for m in node.matchers):
            self.fail(node, "vector selector must contain at least one non-empty matcher")

    def call(self, node):
        types, variadic, returns = FUNCTIONS[node.func]
        name, given, fixed = node.func, len(node.args), len(types)
        if variadic == 0 and given != fixed:
            self.fail(node, f"expected {fixed} argument(s) in call to {name!r}, got {given}")
        if variadic and given < fixed - 1:
            self.fail(node, f"expected at least {fixed - 1} argument(s) in call to {name!r}, "
                            f"got {given}")
        if variadic > 0 and given > fixed - 1 + variadic:
            self.fail(node, f"expected at most {fixed - 1 + variadic} argument(s) in call to "
                            f"{name!r}, got {given}")
        for i, arg in enumerate(node.args):
            self.expect(arg, types[min(i, fixed - 1)], f"call to function {name!r}")
        return returns

    def binary(self, node):
        left, right = self.check(node.lhs), self.check(node.rhs)
        op, vectors = node.op, left == "v" and right == "v"
        if node.bool and op not in COMPARISONS:
            self.fail(node, "bool modifier can only be used on comparison operators")
        if op in COMPARISONS and not node.bool and left == right == "s":
            self.fail(node, "comparisons between scalars must use BOOL modifier")
        if node.matching == "on" and node.group:
            for label in node.labels:
                if label in node.include:
                    self.fail(node, f"label {label!r} must not occur in ON and GROUP clause "
                                    "at once")
        for side in (left, right):
            if side not in ("s", "v"):
                self.fail(node, "binary expression must contain only scalar and instant "
                                "vector types")
        if not vectors and node.labels:
            self.fail(node, "vector matching only allowed between instant vectors")
        if vectors and op in SET_OPERATORS and node.group:
            self.fail(node, f"no grouping allowed for {op!r} operation")
        if not vectors and op in SET_OPERATORS:
            self.fail(node, f"set operator {op!r} not allowed in binary scalar expression")
        return "s" if left == right == "s" else "v"
