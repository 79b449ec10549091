"""PromQL test corpora: queries Prometheus 2.42 accepts (VALID), queries it refuses (INVALID),
and a seeded generator of well-typed queries in varied surface syntax (generated_queries).

The generator writes text directly (not through our renderer), so that the parser is tested
against queries it did not produce: random spacing, newlines and comments between tokens,
keyword case, the three quote kinds with escapes, trailing commas, `by` before or after the
arguments, offsets, `@` and subqueries.
"""

import random

VALID = [
    # selectors and matchers
    "up", "http_requests_total", 'http_requests_total{code="500"}',
    'http_requests_total{code!="200"}', 'http_requests_total{code=~"5.."}',
    'http_requests_total{code!~"2..|3.."}', "http_requests_total{}",
    'http_requests_total{code="500",}', 'http_requests_total{code="500", pod=~"web-.*"}',
    '{__name__="http_requests_total"}', '{__name__=~"http_.*|up"}',
    '{__name__=~"container_.+", container!=""}', '{pod="web-1"}', "job:requests:rate5m",
    'job:requests:rate5m{job="web"}', "sum", 'sum{pod="x"}', "by", "offset", "start", "end",
    "and", "or", "unless", "without", "count_values", "min", "Max", "SUM",
    "http_requests_total # a comment", "# leading comment\nup",
    'up{job="a" # comment inside braces\n}', '{pod=`web-1`}', "{pod='web-1'}",
    '{pod="a\\"b"}', "{pod='a\\'b'}", '{pod="\\x41\\101\\u00e9\\U0001F600"}',
    '{pod="\\a\\b\\f\\n\\r\\t\\v\\\\"}', '{pod="ünïcødé ✓ 日本"}', "{pod=`raw \\n string`}",
    '{pod="{braces} and [brackets] (parens) # not a comment"}', '{pod="\\xff"}',
    # ranges, offsets, @, subqueries
    "http_requests_total[5m]", "http_requests_total[1h30m]", "http_requests_total[90s]",
    "http_requests_total[1y2w3d4h5m6s7ms]", "http_requests_total[ 5m ]", "up[500ms]",
    "up offset 5m", "up offset -5m", "up offset 1h30m", "up[5m] offset 1w",
    "up[5m] offset -1d", "up @ 1700000000", "up @ 1700000000.5", "up @ -100", "up @ +100",
    "up @ 0x10", "up @ 1e9", "up @ start()", "up @ end()", "up @ START()", "up[5m] @ end()",
    "up @ 100 offset 5m", "up offset 5m @ 100", "up[5m] offset 5m @ 100",
    "rate(http_requests_total[5m])[30m:1m]", "rate(http_requests_total[5m])[30m:]",
    "up[30m:1m]", "up[30m:1m] offset 5m", "up[30m:1m] @ end()", "up[30m:1m] offset -5m @ 10",
    "max_over_time(rate(http_requests_total[5m])[1h:5m])",
    "max_over_time((up + 1)[10m:1m])", "min_over_time(sum(up)[10m:])",
    "up offset 5m[10m:1m]", "up @ 100[10m:1m]", "sum_over_time(rate(up[5m])[10m:1m] offset 1m)",
    "rate(up[5m] offset 1h)", "rate(up[5m] @ start())",
    "max_over_time(max_over_time(up[5m:1m])[10m:2m])",
    # numbers and strings
    "1", "1.5", ".5", "5.", "1e3", "1E-3", "1e+3", "0x1F", "0XfF", "017", "018", "Inf", "-Inf",
    "+Inf", "NaN", "nan", "inf", "-1", "- 1", "--1", "+-1", "1 + 2", "2 ^ 3 ^ 2", '"a string"',
    "'single'", "`raw`", "99999999999999999999", "1e308",
    # operators, precedence, modifiers
    "up + up", "up - up * up", "up / up % up", "up ^ up", "up atan2 up", "up == up",
    "up != up", "up > up", "up >= up", "up < up", "up <= up", "up == bool up",
    "up > bool 1", "1 > bool 2", "1 == bool 1", "up and up", "up or up", "up unless up",
    "up and on(job) up", "up or ignoring(job) up", "up unless on() up",
    "up + on(job) up", "up + ignoring(job, pod) up", "up * on(job) group_left up",
    "up * on(job) group_left(pod) up", "up * on(job) group_right(pod, code) up",
    "up * ignoring(job) group_left(pod) up", "up == bool on(job) group_left(pod) up",
    "up + on() up", "up + on(job,) up", "up + on (job) group_left (pod) up",
    "1 + on() up", "up / on() group_left() up", "-up", "+up", "-up ^ 2", "-(up)", "- - up",
    "up + -up", "up ++ up", '{job!~".*"}', "up * -1", "2 * -up ^ 2", "up - -1", "(up)", "((up))", "(up + up) * up",
    "up or up and up unless up", "up + up > up and up or up", "1 - 2 - 3", "2 ^ -1",
    "up > 0.5 == bool 1", "up offset 5m + up", "up @ 100 + up", "time() + up @ 100",
    "-up offset 5m", "-up @ 100",
    # functions
    "rate(up[5m])", "irate(up[5m])", "increase(up[1h])", "delta(up[5m])", "idelta(up[5m])",
    "deriv(up[5m])", "changes(up[5m])", "resets(up[5m])", "abs(up)", "absent(up)",
    'absent(nonexistent{job="x"})', "absent_over_time(up[5m])", "present_over_time(up[5m])",
    "ceil(up)", "floor(up)", "round(up)", "round(up, 0.5)", "clamp(up, 0, 1)",
    "clamp_max(up, 1)", "clamp_min(up, 0)", "exp(up)", "ln(up)", "log2(up)", "log10(up)",
    "sqrt(up)", "sgn(up)", "sort(up)", "sort_desc(up)", "timestamp(up)", "scalar(up)",
    "vector(1)", "vector(time())", "time()", "pi()", "year()", "year(up)", "month()",
    "day_of_month()", "day_of_week(up)", "day_of_year()", "days_in_month()", "hour()",
    "minute(up)", "histogram_quantile(0.9, rate(http_request_duration_seconds_bucket[5m]))",
    "histogram_fraction(0, 0.5, up)", "histogram_count(up)", "histogram_sum(up)",
    "holt_winters(up[5m], 0.5, 0.5)", "predict_linear(up[1h], 3600)",
    "quantile_over_time(0.9, up[5m])", 'label_replace(up, "dst", "$1", "job", "(.*)")',
    'label_join(up, "dst", ",", "job", "pod")', 'label_join(up, "dst", ",")',
    "avg_over_time(up[5m])", "min_over_time(up[5m])", "max_over_time(up[5m])",
    "sum_over_time(up[5m])", "count_over_time(up[5m])", "last_over_time(up[5m])",
    "stddev_over_time(up[5m])", "stdvar_over_time(up[5m])", "sin(up)", "cos(up)", "tan(up)",
    "asin(up)", "acos(up)", "atan(up)", "sinh(up)", "cosh(up)", "tanh(up)", "asinh(up)",
    "acosh(up)", "atanh(up)", "deg(up)", "rad(up)", 'label_replace(up, ("dst"), "x", "", "")',
    "abs(-up)", "rate((up[5m]))", "rate ( up[5m] )",
    # aggregations
    "sum(up)", "sum by (job) (up)", "sum(up) by (job)", "sum without (job) (up)",
    "sum(up) without (job)", "sum by () (up)", "sum by (job,) (up)", "avg(up)", "min(up)",
    "max(up)", "count(up)", "group(up)", "stddev(up)", "stdvar(up)", "topk(3, up)",
    "bottomk(3, up) by (job)", "topk by (job) (3, up)", "quantile(0.9, up)",
    'count_values("value", up)', 'count_values by (job) ("v", up)', "SUM BY (job) (up)",
    "sum by (sum, by, offset, on, bool, group_left, start, end, atan2, and) (up)",
    "sum(rate(http_requests_total[5m])) by (code) / ignoring(code) group_left "
    "sum(rate(http_requests_total[5m]))", "topk(scalar(up), up)", "topk(1 + 1, up)",
    "sum(sum(sum(up)))", "count(count(up) by (job))",
    # layout
    "sum(\n  rate(up[5m])\n)\n", "\tup\t", "up\r\n+\r\nup", "sum # c\n by # c\n (job) (up)",
]

INVALID = [
    "", "   ", "# only a comment", "up{", "up}", "{}", '{job=""}', "up{job}",
    'up{job=}', 'up{job="a" job="b"}', "up{,}", 'up{job="a",,}', 'up{"job"="a"}',
    'up{__name__="x"}', "up[5m", "up[5]", "up[5m:1]", "up[]", "up[-5m]", "up[0s]",
    "up[5m:1m:1m]", "up[5mm]", "up[5x]", "up[1.5m]", "up[5m][5m]", "up[5m][10m:1m]",
    "(up)[5m]", "sum(up)[5m]", "rate(up[5m])[5m]", "up offset 5m[5m]", "up @ 100[5m]",
    "up offset", "up offset 5", "up offset +5m", "up offset 5m offset 5m", "up @", "up @ x",
    "up @ start", "up @ Inf", "up @ NaN", "up @ 1e30", "up @ 100 @ 100", "(up) offset 5m",
    "sum(up) offset 5m", "rate(up[5m]) @ 100", "1 offset 5m", "up offset 0s", "5m",
    "up + ", "+", "up +* up", "up = up", "up =~ up", "up !~ up", "up ! up",
    "1 > 2", "1 == 1", "up + bool up", "up and bool up", "up and 1", "1 or up",
    "up and on(job) group_left up", "up + on(job) group_left(job) up", "1 + on(job) up",
    "up + group_left up", "up + on job up", "up + on(job up", "rate(up)", "rate(up[5m], 1)",
    "rate()", "abs(up[5m])", "abs()", "abs(up, up)", "round(up, 1, 2)", "time(1)",
    "vector(up)", "scalar(up[5m])", "label_replace(up, 1, 2, 3, 4)", "label_join(up)",
    "histogram_quantile(up, 0.9)", "nonexistent_function(up)", "Rate(up[5m])", "atan2(up, up)",
    "rate(up[5m],)", "sum()", "sum(up, up)", "topk(up)", "topk(3)", "topk(\"3\", up)",
    'count_values(3, up)', "quantile(up, up)", "sum(up[5m])", "sum by (job) (up) by (job)",
    "sum by job (up)", "sum by (job:x) (up)", "sum by (1) (up)", "sum by (inf) (up)",
    "sum without (without) (up)", "sum by (\"job\") (up)", "-\"string\"", "-up[5m]",
    "\"a\" + 1", "up + \"a\"", "(", ")", "(up", "up)", "((up)", "[5m]", "up]", "{up}",
    "up{job=\"a\"}{pod=\"b\"}", '"unterminated', "'unterminated", "`unterminated",
    '"bad\\qescape"', '"\\x4"', '"\\u12"', '"\\400"', '"\\uD800"', '"\\U00110000"',
    "'\\\"'", '"\\\'"', '"new\nline"', "up $", "up ~ up", "up{job=~\"a\"} !", "1 2", "up up",
    "0x", "1e", "1e+", "0xG", "1a", "5m5", "1.2.3", "up{job='a'", "sum(up) by",
    "sum(up) without", "on", "bool", "group_left", "ignoring", "atan2", "up offset -",
    "max_over_time(up[5m:1m][5m:1m])", "up @ start(1)", "up[5m] offset 5m offset 1m",
    "absent()", "absent(1)", "pi(1)", "year(1)", "up[5d1y]", "up[1h1h]", "up[300y]",
    "up offset 99999999y", "0xFFFFFFFFFFFFFFFFFF",
]

METRICS = ["up", "http_requests_total", "container_cpu_usage_seconds_total",
           "container_memory_working_set_bytes", "kube_pod_info", "sum", "by", "offset",
           "job:requests:rate5m"]
LABELS = ["pod", "code", "container", "job", "le", "node"]
VALUES = ["web-1", "500", "a\"b", "ü✓", "x{y}", "#no", "", "a'b", "a\\b", "5.."]
RANGE_FUNCS = ["rate", "irate", "increase", "delta", "deriv", "changes", "resets",
               "avg_over_time", "max_over_time", "min_over_time", "sum_over_time",
               "count_over_time", "last_over_time", "absent_over_time", "present_over_time"]
VECTOR_FUNCS = ["abs", "ceil", "floor", "exp", "sqrt", "sgn", "sort", "sort_desc", "timestamp",
                "absent", "ln", "log2", "day_of_week", "hour", "deg"]
AGGS = ["sum", "avg", "min", "max", "count", "group", "stddev", "stdvar"]
ARITH = ["+", "-", "*", "/", "%", "^", "atan2"]
COMPARE = ["==", "!=", ">", "<", ">=", "<="]
SETS = ["and", "or", "unless"]
DURATIONS = ["5m", "1h", "30s", "1h30m", "2d", "90s", "1w", "500ms"]


class _Writer:
    """Random surface syntax for one query."""

    def __init__(self, rng):
        self.rng = rng

    def gap(self):
        roll = self.rng.random()
        if roll < 0.6:
            return " "
        if roll < 0.75:
            return ""
        if roll < 0.85:
            return "\n  "
        if roll < 0.93:
            return " # note (with ) and } inside\n"
        return "\t"

    def word(self, keyword):
        roll = self.rng.random()
        return keyword.upper() if roll < 0.1 else keyword.title() if roll < 0.15 else keyword

    def string(self, value):
        kinds = ['"', "'"] + (["`"] if "`" not in value and "\\" not in value else [])
        quote = self.rng.choice(kinds)
        if quote == "`":
            return f"`{value}`"
        escaped = value.replace("\\", "\\\\").replace(quote, "\\" + quote)
        if self.rng.random() < 0.2:
            escaped = escaped.replace("a", "\\x61")
        return quote + escaped + quote


def _selector(w, rng, name_ok=True):
    name = rng.choice(METRICS) if name_ok and rng.random() < 0.8 else ""
    matchers = []
    for _ in range(rng.randrange(0 if name else 1, 3)):
        op = rng.choice(["=", "!=", "=~", "!~"])
        value = rng.choice(VALUES[:2]) if op in ("=~", "!~") else rng.choice(VALUES)
        matchers.append(f"{rng.choice(LABELS)}{w.gap()}{op}{w.gap()}{w.string(value)}")
    if not name:
        matchers.append(f"__name__={w.string(rng.choice(METRICS[:5]))}")
    body = ("," + w.gap()).join(matchers) + ("," if matchers and rng.random() < 0.1 else "")
    braces = "{" + w.gap() + body + w.gap() + "}" if matchers or rng.random() < 0.1 else ""
    return name + braces


def _mods(w, rng):
    out = ""
    if rng.random() < 0.2:
        out += f" {w.word('offset')} {'-' if rng.random() < 0.3 else ''}{rng.choice(DURATIONS)}"
    if rng.random() < 0.15:
        at = rng.choice(["100", "1700000000.5", "-5", f"{w.word('start')}()",
                         f"{w.word('end')}()"])
        out += f"{w.gap()}@{w.gap()}{at}"
    return out


def _grouping(w, rng):
    labels = rng.sample(LABELS, rng.randrange(0, 3))
    return "(" + ("," + w.gap()).join(labels) + ")"


def _matrix(w, rng, depth):
    if depth > 0 and rng.random() < 0.25:
        step = rng.choice(["", "1m", "30s"])
        return f"({_vector(w, rng, depth - 1)})[{rng.choice(DURATIONS)}:{step}]{_mods(w, rng)}"
    return f"{_selector(w, rng)}[{w.gap()}{rng.choice(DURATIONS)}{w.gap()}]{_mods(w, rng)}"


def _scalar(w, rng, depth):
    roll = rng.random()
    if depth <= 0 or roll < 0.5:
        return rng.choice(["1", "0.5", "2", "1e3", "0x10", ".5", "Inf", "NaN", "-1"])
    if roll < 0.6:
        return "time()"
    if roll < 0.75:
        return f"scalar({_vector(w, rng, depth - 1)})"
    if roll < 0.9:
        op = rng.choice(ARITH)
        return f"{_scalar(w, rng, depth - 1)} {op} {_scalar(w, rng, depth - 1)}"
    return f"({_scalar(w, rng, depth - 1)})"


def _vector(w, rng, depth):
    roll = rng.random() if depth > 0 else 0
    g = w.gap
    if roll < 0.3:
        return _selector(w, rng) + _mods(w, rng)
    if roll < 0.45:
        return f"{rng.choice(RANGE_FUNCS)}({g()}{_matrix(w, rng, depth - 1)}{g()})"
    if roll < 0.55:
        return f"{rng.choice(VECTOR_FUNCS)}({_vector(w, rng, depth - 1)})"
    if roll < 0.7:
        op, body = w.word(rng.choice(AGGS)), _vector(w, rng, depth - 1)
        if rng.random() < 0.2:
            op = w.word(rng.choice(["topk", "bottomk", "quantile"]))
            body = f"{_scalar(w, rng, 0)},{g()}{body}"
        clause = f"{w.word(rng.choice(['by', 'without']))}{g()}{_grouping(w, rng)}"
        if rng.random() < 0.3:
            return f"{op}({body})"
        return (f"{op}{g()}{clause}{g()}({body})" if rng.random() < 0.5
                else f"{op}({body}){g()}{clause}")
    if roll < 0.9:
        return _binary(w, rng, depth)
    if roll < 0.95:
        return f"-{_vector(w, rng, depth - 1)}"
    return f"({_vector(w, rng, depth - 1)})"


def _binary(w, rng, depth):
    left, right = _vector(w, rng, depth - 1), _vector(w, rng, depth - 1)
    kind = rng.random()
    if kind < 0.2:
        return f"{left} {w.word(rng.choice(SETS))} {right}"
    if kind < 0.3:
        return f"{left} {rng.choice(ARITH)} {_scalar(w, rng, 0)}"
    op = rng.choice(ARITH + COMPARE)
    mods = f" {w.word('bool')}" if op in COMPARE and rng.random() < 0.4 else ""
    if rng.random() < 0.4:
        mods += f" {w.word(rng.choice(['on', 'ignoring']))}{_grouping(w, rng)}"
        if rng.random() < 0.3:
            mods += f" {w.word(rng.choice(['group_left', 'group_right']))}"
            if rng.random() < 0.5:
                mods += "(" + rng.choice(["", "node", "container"]) + ")"
    return f"({left}) {op}{mods} ({right})" if rng.random() < 0.3 else f"{left} {op}{mods} {right}"


def generated_queries(count, *, seed=20, depth=3):
    """`count` queries written by the seeded generator (mostly well-typed ones)."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        w = _Writer(rng)
        out.append(_vector(w, rng, rng.randrange(1, depth + 1)) if rng.random() < 0.9
                   else _scalar(w, rng, 2))
    return out


def mutated_queries(queries, count, *, seed=21):
    """`count` queries made from `queries` by deleting, doubling or swapping a character
    (mostly invalid ones, a few still valid): for differential tests of accept/refuse."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        q = rng.choice(queries)
        if not q:
            continue
        i = rng.randrange(len(q))
        roll = rng.random()
        if roll < 0.4:
            q = q[:i] + q[i + 1:]
        elif roll < 0.7:
            q = q[:i] + q[i] + q[i:]
        else:
            q = q[:i] + rng.choice("(){}[],:=!~\"'`@#-+ 0a") + q[i + 1:]
        out.append(q)
    return out
