"""PromQL's parser: tokens -> syntax tree, by the grammar of Prometheus 2.42
(promql/parser/generated_parser.y), then type-checked (promql_check).

Precedence climbing over the binary operators, loosest first: `or`; `and` `unless`; the
comparisons `== != <= < >= >` (with an optional `bool`); `+ -`; `* / % atan2`; `^` (right
associative). Every operator may carry `on(...)`/`ignoring(...)` and then
`group_left`/`group_right` with an optional label list. A unary `+`/`-` binds like `*`, its
operand taking only `^`. After any primary (selector, call, aggregation, parentheses, literal)
come, in any number: `[range]` (a range selector, on a selector only), `[range:step]` (a
subquery), `offset [-]duration` and `@ timestamp|start()|end()` (on selectors and subqueries).
An aggregation's `by`/`without` goes before or after its arguments. Words that are keywords
elsewhere (`sum`, `by`, `offset`, `and`, ...) name metrics where a selector may stand.
"""

import math
import re

from .promql_ast import (AGGREGATIONS, FUNCTIONS, PARAM_TYPES, Aggregate, Binary, Call, Matcher,
                         MatrixSelector, Number, Paren, String, Subquery, Unary, VectorSelector,
                         children)
from .promql_check import check
from .promql_lex import KEYWORDS, PromQLError, parse_error, tokenize
from .promql_literals import duration_ms, number_value

MAX_CHARS = 10_000
MAX_DEPTH = 100     # nesting the parser follows, and the depth of the tree it returns
PRECEDENCE = {"or": 1, "and": 2, "unless": 2, "==": 3, "!=": 3, "<=": 3, "<": 3, ">=": 3,
              ">": 3, "+": 4, "-": 4, "*": 5, "/": 5, "%": 5, "atan2": 5, "^": 6}
UNARY_OPERAND = 6   # a unary operator's operand takes only `^` (it binds like `*`)
METRIC_WORDS = AGGREGATIONS | {"IDENT", "METRIC_IDENT", "by", "without", "and", "or", "unless",
                               "offset", "start", "end"}
LABEL_WORDS = (KEYWORDS - {"without"}) | {"IDENT", "METRIC_IDENT"}
_LABEL_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOO_DEEP = (f"the PromQL query nests deeper than {MAX_DEPTH} levels; write it with fewer "
             "nested operations")


def parse(text):
    """The syntax tree of a PromQL expression; PromQLError (the parser's message) if the text
    is not one Prometheus would accept."""
    if not isinstance(text, str):
        raise PromQLError("the PromQL query must be a string")
    if len(text) > MAX_CHARS:
        raise PromQLError(f"the PromQL query is {len(text)} characters long, over the "
                          f"{MAX_CHARS} this server reads; write a shorter one")
    tree = _Parser(text).parse()
    if tree_depth(tree) > MAX_DEPTH:
        raise PromQLError(_TOO_DEEP)
    check(tree, text)
    return tree


def tree_depth(tree):
    """The number of nodes on the longest path from the root down (without recursion)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children(node))
    return deepest


def describe(tok):
    """A token as a parse error names it."""
    if tok.kind == "EOF":
        return "end of input"
    kinds = {"IDENT": "identifier", "METRIC_IDENT": "metric identifier", "NUMBER": "number",
             "DURATION": "duration", "STRING": "string"}
    if tok.kind in kinds:
        return f"{kinds[tok.kind]} {tok.text!r}"
    return f"keyword {tok.text!r}" if tok.kind in KEYWORDS else repr(tok.text)


class _Parser:
    def __init__(self, text):
        self.text, self.tokens, self.i, self.depth = text, tokenize(text), 0, 0

    def peek(self):
        return self.tokens[self.i]

    def next(self):
        tok = self.tokens[self.i]
        self.i = min(self.i + 1, len(self.tokens) - 1)
        return tok

    def fail(self, pos, message):
        raise parse_error(self.text, pos, message)

    def unexpected(self, tok, context="", expected=""):
        where = f" in {context}" if context else ""
        want = f", expected {expected}" if expected else ""
        self.fail(tok.pos, f"unexpected {describe(tok)}{where}{want}")

    def expect(self, kind, context, expected):
        tok = self.next()
        if tok.kind != kind:
            self.unexpected(tok, context, expected)
        return tok

    def parse(self):
        if self.peek().kind == "EOF":
            self.fail(0, "no expression found in input")
        tree = self.expr(1)
        if self.peek().kind != "EOF":
            self.unexpected(self.peek())
        return tree

    def expr(self, min_prec):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise PromQLError(_TOO_DEEP)
        lhs = self.unary()
        while True:
            tok = self.peek()
            prec = PRECEDENCE.get(tok.kind)
            if prec is None or prec < min_prec:
                break
            self.next()
            node = Binary(tok.kind, lhs, None, pos=tok.pos)
            self.bin_modifiers(node)
            node.rhs = self.expr(prec if tok.kind == "^" else prec + 1)
            lhs = node
        self.depth -= 1
        return lhs

    def bin_modifiers(self, node):
        if self.peek().kind == "bool":
            self.next()
            node.bool = True
        if self.peek().kind in ("on", "ignoring"):
            node.matching = self.next().kind
            node.labels = self.grouping_labels()
            if self.peek().kind in ("group_left", "group_right"):
                node.group = self.next().kind
                if self.peek().kind == "(":
                    node.include = self.grouping_labels()

    def unary(self):
        tok = self.peek()
        if tok.kind in ("+", "-"):
            self.next()
            return Unary(tok.kind, self.expr(UNARY_OPERAND), pos=tok.pos)
        return self.postfix(self.primary())

    def primary(self):
        tok = self.next()
        kind, after = tok.kind, self.peek().kind
        if kind == "NUMBER":
            try:
                return Number(tok.text, number_value(tok.text), pos=tok.pos)
            except ValueError as exc:
                self.fail(tok.pos, str(exc))
        if kind == "STRING":
            return String(tok.value, pos=tok.pos)
        if kind == "(":
            inner = self.expr(1)
            self.expect(")", "parenthesized expression", '")"')
            return Paren(inner, pos=tok.pos)
        if kind == "{":
            return VectorSelector("", self.matchers(), pos=tok.pos)
        if kind == "IDENT" and after == "(":
            return self.call(tok)
        if kind in AGGREGATIONS and after in ("(", "by", "without"):
            return self.aggregate(tok)
        if kind in METRIC_WORDS:
            matchers = []
            if after == "{":
                self.next()
                matchers = self.matchers()
            return VectorSelector(tok.text, matchers, pos=tok.pos)
        self.unexpected(tok)

    def matchers(self):
        """The matchers of a selector, its '{' already read."""
        out, context = [], "label matching"
        if self.peek().kind == "}":
            self.next()
            return out
        while True:
            name = self.expect("IDENT", context, 'identifier or "}"')
            op = self.next()
            if op.kind not in ("=", "!=", "=~", "!~"):
                self.unexpected(op, context, "label matching operator")
            value = self.expect("STRING", context, "string")
            out.append(Matcher(name.text, op.kind, value.value))
            if self.closes(",", "}", context):
                return out

    def closes(self, comma, close, context):
        """After a list item: True at its closing token (a trailing comma allowed), False
        after a comma that more items follow."""
        sep = self.next()
        if sep.kind == comma and self.peek().kind == close:
            sep = self.next()
        if sep.kind not in (comma, close):
            self.unexpected(sep, context, f'"{comma}" or "{close}"')
        return sep.kind == close

    def call(self, name):
        if name.text not in FUNCTIONS:
            self.fail(name.pos, f"unknown function with name {name.text!r}")
        return Call(name.text, self.arguments("function call"), pos=name.pos)

    def arguments(self, context):
        self.expect("(", context, '"("')
        args = []
        if self.peek().kind == ")":
            self.next()
            return args
        while True:
            args.append(self.expr(1))
            sep = self.next()
            if sep.kind == ")":
                return args
            if sep.kind != ",":
                self.unexpected(sep, context, '"," or ")"')
            if self.peek().kind == ")":
                self.fail(sep.pos, "trailing commas not allowed in function call args")

    def aggregate(self, op):
        node = Aggregate(op.kind, None, pos=op.pos)
        if self.peek().kind in ("by", "without"):
            self.grouping(node)
        args = self.arguments("aggregation")
        if node.grouping is None and self.peek().kind in ("by", "without"):
            self.grouping(node)
        if not args:
            self.fail(op.pos, "no arguments for aggregate expression provided")
        want = 2 if op.kind in PARAM_TYPES else 1
        if len(args) != want:
            self.fail(op.pos, "wrong number of arguments for aggregate expression provided, "
                              f"expected {want}, got {len(args)}")
        node.expr, node.param = args[-1], args[0] if want == 2 else None
        return node

    def grouping(self, node):
        node.without = self.next().kind == "without"
        node.grouping = self.grouping_labels()

    def grouping_labels(self):
        context = "grouping opts"
        self.expect("(", context, '"("')
        labels = []
        if self.peek().kind == ")":
            self.next()
            return labels
        while True:
            tok = self.next()
            if tok.kind not in LABEL_WORDS or not _LABEL_RE.match(tok.text):
                self.unexpected(tok, context, "label")
            labels.append(tok.text)
            if self.closes(",", ")", context):
                return labels

    def postfix(self, node):
        while True:
            kind = self.peek().kind
            if kind == "[":
                node = self.range_or_subquery(node)
            elif kind == "offset":
                self.offset(node)
            elif kind == "@":
                self.at(node)
            else:
                return node

    def duration(self, tok, context):
        if tok.kind != "DURATION":
            self.unexpected(tok, context, "duration")
        try:
            duration_ms(tok.text)
        except ValueError as exc:
            self.fail(tok.pos, str(exc))
        return tok.text

    def range_or_subquery(self, node):
        bracket = self.next()
        span = self.duration(self.next(), "subquery or range")
        tok = self.next()
        if tok.kind == "]":
            if not isinstance(node, VectorSelector):
                self.fail(bracket.pos, "ranges only allowed for vector selectors")
            if node.mods.offset:
                self.fail(bracket.pos, "no offset modifiers allowed before range")
            if node.mods.at:
                self.fail(bracket.pos, "no @ modifiers allowed before range")
            return MatrixSelector(node, span, pos=node.pos)
        if tok.kind != ":":
            self.unexpected(tok, "subquery or range", '":" or "]"')
        step, tok = "", self.next()
        if tok.kind == "DURATION":
            step, tok = self.duration(tok, "subquery selector"), self.next()
        if tok.kind != "]":
            self.unexpected(tok, "subquery selector", 'duration or "]"' if not step else '"]"')
        return Subquery(node, span, step, pos=bracket.pos)

    def modified(self, node, tok, what):
        """The selector or subquery whose modifiers an offset or @ at `tok` sets."""
        if isinstance(node, MatrixSelector):
            return node.selector
        if isinstance(node, (VectorSelector, Subquery)):
            return node
        self.fail(tok.pos, f"{what} modifier must be preceded by an instant vector selector or "
                           "range vector selector or a subquery")

    def offset(self, node):
        tok = self.next()
        sign = ""
        if self.peek().kind == "-":
            sign = self.next().kind
        text = sign + self.duration(self.next(), "offset")
        target = self.modified(node, tok, "offset")
        if target.mods.offset:
            self.fail(tok.pos, "offset may not be set multiple times")
        target.mods.offset = text

    def at(self, node):
        tok, value = self.next(), self.next()
        if value.kind in ("start", "end"):
            self.expect("(", "@", '"("')
            self.expect(")", "@", '")"')
            text = value.kind + "()"
        else:
            sign = value.kind if value.kind in ("+", "-") else ""
            if sign:
                value = self.next()
            if value.kind != "NUMBER":
                self.unexpected(value, "@", "timestamp")
            try:
                seconds = number_value(value.text) * (-1 if sign == "-" else 1)
            except ValueError as exc:
                self.fail(value.pos, str(exc))
            if not math.isfinite(seconds) or abs(seconds) >= 2.0 ** 63:
                self.fail(tok.pos, f"timestamp out of bounds for @ modifier: {seconds:f}")
            text = sign + value.text
        target = self.modified(node, tok, "@")
        if target.mods.at:
            self.fail(tok.pos, "@ <timestamp> may not be set multiple times")
        target.mods.at = text
