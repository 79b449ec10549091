"""PromQL's syntax tree, its function table and its canonical rendering.

The nodes mirror Prometheus 2.42's promql/parser/ast.go, with the source's parentheses kept as
Paren nodes, so that render(parse(q)) is read by Prometheus exactly as q was: same tree, same
precedence. Rendering is canonical: single spaces around operators, lower-case keywords,
double-quoted strings with Go escapes, comments dropped; numbers and durations keep their
source text (`0x1F`, `1h30m`), which Prometheus has already read once.
"""

from dataclasses import dataclass, field

from .promql_literals import quote

# name -> (argument types, variadic, return type); v: instant vector, m: range vector,
# s: scalar, S: string. variadic: 0 fixed, n: up to n optional trailing arguments of the last
# type, -1: any number of them (promql/parser/functions.go).
FUNCTIONS = {
    **dict.fromkeys((
        "abs", "absent", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos",
        "cosh", "deg", "exp", "floor", "histogram_count", "histogram_sum", "ln", "log10",
        "log2", "rad", "sgn", "sin", "sinh", "sort", "sort_desc", "sqrt", "tan", "tanh",
        "timestamp"), ("v", 0, "v")),
    **dict.fromkeys((
        "absent_over_time", "avg_over_time", "changes", "count_over_time", "delta", "deriv",
        "idelta", "increase", "irate", "last_over_time", "max_over_time", "min_over_time",
        "present_over_time", "rate", "resets", "stddev_over_time", "stdvar_over_time",
        "sum_over_time"), ("m", 0, "v")),
    **dict.fromkeys((
        "days_in_month", "day_of_month", "day_of_week", "day_of_year", "hour", "minute",
        "month", "year"), ("v", 1, "v")),
    "clamp": ("vss", 0, "v"), "clamp_max": ("vs", 0, "v"), "clamp_min": ("vs", 0, "v"),
    "histogram_fraction": ("ssv", 0, "v"), "histogram_quantile": ("sv", 0, "v"),
    "holt_winters": ("mss", 0, "v"), "label_replace": ("vSSSS", 0, "v"),
    "label_join": ("vSSS", -1, "v"), "pi": ("", 0, "s"), "predict_linear": ("ms", 0, "v"),
    "quantile_over_time": ("sm", 0, "v"), "round": ("vs", 1, "v"), "scalar": ("v", 0, "s"),
    "time": ("", 0, "s"), "vector": ("s", 0, "v"),
}
AGGREGATIONS = frozenset(("sum", "avg", "count", "min", "max", "group", "stddev", "stdvar",
                          "topk", "bottomk", "count_values", "quantile"))
PARAM_TYPES = {"topk": "s", "bottomk": "s", "quantile": "s", "count_values": "S"}
TYPE_NAMES = {"v": "instant vector", "m": "range vector", "s": "scalar", "S": "string"}


@dataclass(eq=False)
class Matcher:
    name: str
    op: str       # = != =~ !~
    value: str


@dataclass(eq=False)
class Modifiers:
    """offset and @ of a selector or subquery, each as its source text ('-5m', 'start()')."""
    offset: str = ""
    at: str = ""


@dataclass(eq=False)
class VectorSelector:
    name: str                      # "" when only {...} names the series
    matchers: list
    pos: int = 0
    mods: Modifiers = field(default_factory=Modifiers)


@dataclass(eq=False)
class MatrixSelector:
    selector: VectorSelector       # its mods are the matrix's (written after the range)
    range: str
    pos: int = 0


@dataclass(eq=False)
class Subquery:
    expr: object
    range: str
    step: str                      # "" for the default step
    pos: int = 0
    mods: Modifiers = field(default_factory=Modifiers)


@dataclass(eq=False)
class Call:
    func: str
    args: list
    pos: int = 0


@dataclass(eq=False)
class Aggregate:
    op: str
    expr: object
    param: object = None
    grouping: list = None          # None: no by/without clause
    without: bool = False
    pos: int = 0


@dataclass(eq=False)
class Binary:
    op: str
    lhs: object
    rhs: object
    bool: bool = False
    matching: str = ""             # "on", "ignoring" or ""
    labels: list = field(default_factory=list)
    group: str = ""                # "group_left", "group_right" or ""
    include: list = field(default_factory=list)
    pos: int = 0


@dataclass(eq=False)
class Unary:
    op: str
    expr: object
    pos: int = 0


@dataclass(eq=False)
class Paren:
    expr: object
    pos: int = 0


@dataclass(eq=False)
class Number:
    text: str
    value: float
    pos: int = 0


@dataclass(eq=False)
class String:
    value: str
    pos: int = 0


def children(node):
    """The expressions directly below a node, in source order."""
    if isinstance(node, MatrixSelector):
        return [node.selector]
    if isinstance(node, (Subquery, Unary, Paren)):
        return [node.expr]
    if isinstance(node, Call):
        return list(node.args)
    if isinstance(node, Aggregate):
        return [node.param, node.expr] if node.param is not None else [node.expr]
    if isinstance(node, Binary):
        return [node.lhs, node.rhs]
    return []


def walk(node):
    """Every node of a tree, parents before children (no recursion: trees can be deep)."""
    stack = [node]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def _mods(mods):
    return (f" @ {mods.at}" if mods.at else "") + (f" offset {mods.offset}" if mods.offset else "")


def _labels(names):
    return "(" + ", ".join(names) + ")"


def render(node):
    """The canonical text of a tree."""
    kind = type(node)
    if kind is VectorSelector:
        inner = ", ".join(f"{m.name}{m.op}{quote(m.value)}" for m in node.matchers)
        braces = "{" + inner + "}" if inner or not node.name else ""
        return node.name + braces + _mods(node.mods)
    if kind is MatrixSelector:
        sel = node.selector
        return (render(VectorSelector(sel.name, sel.matchers)) + f"[{node.range}]"
                + _mods(sel.mods))
    if kind is Subquery:
        return f"{render(node.expr)}[{node.range}:{node.step}]" + _mods(node.mods)
    if kind is Call:
        return node.func + "(" + ", ".join(render(a) for a in node.args) + ")"
    if kind is Aggregate:
        clause = ""
        if node.grouping is not None:
            clause = (" without " if node.without else " by ") + _labels(node.grouping)
        args = ([render(node.param)] if node.param is not None else []) + [render(node.expr)]
        return f"{node.op}{clause}{' ' if clause else ''}(" + ", ".join(args) + ")"
    if kind is Binary:
        mods = " bool" if node.bool else ""
        if node.matching:
            mods += f" {node.matching}{_labels(node.labels)}"
        if node.group:
            mods += f" {node.group}{_labels(node.include)}"
        return f"{render(node.lhs)} {node.op}{mods} {render(node.rhs)}"
    if kind is Unary:
        return node.op + render(node.expr)
    if kind is Paren:
        return "(" + render(node.expr) + ")"
    if kind is Number:
        return node.text
    return quote(node.value)
