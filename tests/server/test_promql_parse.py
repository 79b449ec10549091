"""The PromQL parser in-process: tokens, precedence, modifiers, literals, type rules, refusals
and canonical rendering. (test_promql_prometheus.py checks the same corpora against the real
Prometheus: that it accepts and refuses what this parser does.)"""

import math
import random

import pytest

from mcp_kubectl_server.digests.promql import PromQLError, parse, render
from mcp_kubectl_server.digests.promql_ast import (Aggregate, Binary, Call, MatrixSelector,
                                                   Number, Paren, String, Subquery, Unary,
                                                   VectorSelector, walk)
from mcp_kubectl_server.digests.promql_lex import tokenize
from mcp_kubectl_server.digests.promql_parse import MAX_CHARS, MAX_DEPTH
from tests.server.promql_corpus import INVALID, VALID, generated_queries


def shape(node):
    """A compact structure of a tree: ('+', 'a', ('*', 'b', 'c')), '-a', 'rate(...)'."""
    if isinstance(node, Binary):
        return (node.op, shape(node.lhs), shape(node.rhs))
    if isinstance(node, Unary):
        return (node.op, shape(node.expr))
    if isinstance(node, Paren):
        return ("()", shape(node.expr))
    return render(node)


@pytest.mark.parametrize("query", VALID)
def test_every_valid_query_parses_and_its_rendering_parses_to_the_same_tree(query):
    canonical = render(parse(query))
    assert render(parse(canonical)) == canonical


@pytest.mark.parametrize("query", INVALID)
def test_every_invalid_query_is_refused_with_a_parse_error(query):
    with pytest.raises(PromQLError, match=r"^PromQL parse error at \d+:\d+: \S"):
        parse(query)


def test_generated_queries_render_to_text_that_parses_to_the_same_tree():
    parsed = 0
    for query in generated_queries(400):
        try:
            tree = parse(query)
        except PromQLError:
            continue
        parsed += 1
        canonical = render(tree)
        assert shape(parse(canonical)) == shape(tree), query
        assert render(parse(canonical)) == canonical
    assert parsed > 300  # the generator writes mostly well-typed queries


@pytest.mark.parametrize("query, expected", [
    ("a + b * c", ("+", "a", ("*", "b", "c"))),
    ("a * b + c", ("+", ("*", "a", "b"), "c")),
    ("a - b - c", ("-", ("-", "a", "b"), "c")),
    ("a ^ b ^ c", ("^", "a", ("^", "b", "c"))),
    ("a or b and c", ("or", "a", ("and", "b", "c"))),
    ("a and b or c", ("or", ("and", "a", "b"), "c")),
    ("a unless b and c", ("and", ("unless", "a", "b"), "c")),
    ("a > b + c", (">", "a", ("+", "b", "c"))),
    ("a == b > c", (">", ("==", "a", "b"), "c")),
    ("a or b == c", ("or", "a", ("==", "b", "c"))),
    ("a atan2 b + c", ("+", ("atan2", "a", "b"), "c")),
    ("a % b * c", ("*", ("%", "a", "b"), "c")),
    ("-a * b", ("*", ("-", "a"), "b")),
    ("-a ^ b", ("-", ("^", "a", "b"))),
    ("-a + b", ("+", ("-", "a"), "b")),
    ("a ^ -b ^ c", ("^", "a", ("-", ("^", "b", "c")))),
    ("a ^ -b * c", ("*", ("^", "a", ("-", "b")), "c")),
    ("a + -b * c", ("+", "a", ("*", ("-", "b"), "c"))),
    ("- -a", ("-", ("-", "a"))),
    ("(a + b) * c", ("*", ("()", ("+", "a", "b")), "c")),
    ("a + b offset 5m", ("+", "a", "b offset 5m")),
    ("a + b @ 10", ("+", "a", "b @ 10")),
    ("-a offset 5m", ("-", "a offset 5m")),
])
def test_operator_precedence_and_associativity_follow_prometheus(query, expected):
    assert shape(parse(query)) == expected


def test_binary_modifiers_are_kept():
    node = parse("a == bool on(job, pod) group_left(node) b")
    assert (node.bool, node.matching, node.labels, node.group, node.include) == (
        True, "on", ["job", "pod"], "group_left", ["node"])
    node = parse("a / ignoring(code) group_right b")
    assert (node.matching, node.labels, node.group, node.include) == (
        "ignoring", ["code"], "group_right", [])
    assert render(parse("a + ON(x) GROUP_LEFT (y) b")) == "a + on(x) group_left(y) b"


def test_selectors_matchers_and_names():
    node = parse('http_requests_total{code=~"5..", pod!="x", job!~"a|b", le="1"}')
    assert node.name == "http_requests_total"
    assert [(m.name, m.op, m.value) for m in node.matchers] == [
        ("code", "=~", "5.."), ("pod", "!=", "x"), ("job", "!~", "a|b"), ("le", "=", "1")]
    bare = parse('{__name__=~"http_.*"}')
    assert bare.name == "" and bare.matchers[0].name == "__name__"
    assert parse("job:rate5m").name == "job:rate5m"


@pytest.mark.parametrize("word", ["sum", "by", "offset", "and", "or", "unless", "without",
                                  "start", "end", "topk", "count_values", "Max"])
def test_words_that_are_keywords_elsewhere_name_metrics_where_a_selector_may_stand(word):
    node = parse(f'{word}{{pod="x"}}')
    assert isinstance(node, VectorSelector) and node.name == word


@pytest.mark.parametrize("word", ["on", "ignoring", "group_left", "group_right", "bool",
                                  "atan2", "inf", "nan"])
def test_words_that_cannot_name_a_metric(word):
    with pytest.raises(PromQLError):
        parse(f'{word}{{pod="x"}}')


def test_keywords_are_case_insensitive_and_functions_are_not():
    assert render(parse("SUM BY (job) (up) OR Count(up)")) == "sum by (job) (up) or count(up)"
    with pytest.raises(PromQLError, match="unknown function with name 'Rate'"):
        parse("Rate(up[5m])")


def test_aggregation_clause_before_or_after_the_arguments_is_the_same_tree():
    assert render(parse("sum(up) by (job)")) == render(parse("sum by (job) (up)")) \
        == "sum by (job) (up)"
    node = parse("topk(3, up) without (pod)")
    assert isinstance(node, Aggregate) and node.without and node.grouping == ["pod"]
    assert render(node.param) == "3"
    assert parse('count_values("v", up)').param.value == "v"
    assert parse("sum(up)").grouping is None and parse("sum by () (up)").grouping == []


def test_ranges_subqueries_offsets_and_at():
    node = parse("up[5m] offset -1h @ start()")
    assert isinstance(node, MatrixSelector) and node.range == "5m"
    assert (node.selector.mods.offset, node.selector.mods.at) == ("-1h", "start()")
    node = parse("max_over_time(rate(up[5m])[1h:1m] @ 100 offset 5m)")
    sub = node.args[0]
    assert isinstance(sub, Subquery) and (sub.range, sub.step) == ("1h", "1m")
    assert (sub.mods.at, sub.mods.offset) == ("100", "5m")
    assert parse("up[30m:]").step == ""
    assert render(parse("up offset 5m @ end()")) == "up @ end() offset 5m"


@pytest.mark.parametrize("text, value", [
    ('"plain"', "plain"), ("'single'", "single"), ("`raw \\n`", "raw \\n"),
    ('"a\\"b"', 'a"b'), ("'a\\'b'", "a'b"), ('"\\x41\\101\\u00e9\\U0001F600"', "AAé😀"),
    ('"\\a\\b\\f\\n\\r\\t\\v\\\\"', "\a\b\f\n\r\t\v\\"), ('"日本 ✓"', "日本 ✓"),
    ('"{x} # not a comment"', "{x} # not a comment"), ('"\\xc3\\xa9"', "é"),
])
def test_string_literals_are_unquoted_with_go_escapes(text, value):
    node = parse(text)
    assert isinstance(node, String) and node.value == value
    assert parse(render(node)).value == value


def test_a_string_with_bytes_that_are_not_utf8_renders_to_the_same_bytes():
    node = parse('"\\xff\\x00a"')
    assert render(node) == '"\\xff\\x00a"'


@pytest.mark.parametrize("text, value", [
    ("1", 1.0), ("1.5", 1.5), (".5", 0.5), ("5.", 5.0), ("1e3", 1000.0), ("1E-3", 0.001),
    ("0x1F", 31.0), ("0XfF", 255.0), ("017", 15.0), ("018", 18.0), ("Inf", math.inf),
])
def test_number_literals_are_read_as_prometheus_reads_them(text, value):
    node = parse(text)
    assert isinstance(node, Number) and node.value == value and render(node) == text


def test_nan_is_a_number():
    assert math.isnan(parse("NaN").value)


def test_comments_are_dropped_and_strings_keep_hashes():
    assert render(parse('up # {namespace="x"}\n + up{a="#b"} # trailing')) == 'up + up{a="#b"}'
    assert render(parse('up{a="b" # in braces\n, c="d"}')) == 'up{a="b", c="d"}'


def test_tokens_carry_their_position():
    toks = tokenize("sum(\n  up)")
    assert [(t.kind, t.pos) for t in toks] == [("sum", 0), ("(", 3), ("IDENT", 7), (")", 9),
                                               ("EOF", 10)]


@pytest.mark.parametrize("query, message", [
    ("sum(", "1:5: unclosed left parenthesis"),
    ("up{job=~}", "1:9: unexpected '}' in label matching, expected string"),
    ("rate(up)", "expected type range vector in call to function 'rate', got instant vector"),
    ("nope(up)", "unknown function with name 'nope'"),
    ("up +\n  ", "2:3: unexpected end of input"),
    ("1 > 2", "comparisons between scalars must use BOOL modifier"),
    ("up[5m][5m]", "ranges only allowed for vector selectors"),
    ("sum(up) offset 5m", "offset modifier must be preceded by an instant vector selector"),
    ("{}", "vector selector must contain at least one non-empty matcher"),
    ('up{__name__="x"}', "metric name must not be set twice"),
    ("up[0s]", "duration must be greater than 0"),
    ("up and 1", "set operator 'and' not allowed in binary scalar expression"),
    ('"\\q"', "unknown escape sequence"),
    ("", "no expression found in input"),
    ("x[5m a]", "unexpected 'a' inside brackets"),
])
def test_refusals_say_where_and_why(query, message):
    with pytest.raises(PromQLError, match="PromQL parse error") as caught:
        parse(query)
    assert message in str(caught.value)


def test_deep_nesting_is_refused_before_python_runs_out_of_stack():
    ok = "(" * (MAX_DEPTH - 2) + "up" + ")" * (MAX_DEPTH - 2)
    assert isinstance(parse(ok), Paren)
    for deep in ("(" * 4000 + "up" + ")" * 4000, "abs(" * 1500 + "up" + ")" * 1500,
                 "-" * 9000 + "up", " ^ ".join(["up"] * 1500), " + ".join(["up"] * 1500),
                 "sum(" * 1500 + "up" + ")" * 1500, "up" + "[5m:]" * 1500):
        with pytest.raises(PromQLError, match="nests deeper than"):
            parse(deep)


def test_a_query_over_the_length_limit_is_refused():
    parse('up{pod="' + "x" * (MAX_CHARS - 20) + '"}')
    with pytest.raises(PromQLError, match="characters long"):
        parse('up{pod="' + "x" * MAX_CHARS + '"}')


def test_text_that_is_not_a_string_or_not_unicode_is_refused():
    with pytest.raises(PromQLError, match="must be a string"):
        parse(b"up")
    with pytest.raises(PromQLError, match="lone surrogate"):
        parse('up{pod="\udc80"}')


def test_walk_visits_every_node_once_without_recursion():
    nodes = list(walk(parse("a + rate(b[5m]) * -c")))
    kinds = [type(n).__name__ for n in nodes]
    assert kinds == ["Binary", "VectorSelector", "Binary", "Call", "MatrixSelector",
                     "VectorSelector", "Unary", "VectorSelector"]
    assert isinstance(nodes[3], Call)
    deep = parse(" + ".join(["up"] * (MAX_DEPTH - 1)))
    assert sum(isinstance(n, VectorSelector) for n in walk(deep)) == MAX_DEPTH - 1


def test_canonical_rendering():
    query = ("SUM  by(job)(rate( http_requests_total{ code=~'5..' , }[ 5m ] offset -1h))"
             " /ignoring(code)group_left   sum(rate(http_requests_total[5m]))  # why")
    assert render(parse(query)) == (
        'sum by (job) (rate(http_requests_total{code=~"5.."}[5m] offset -1h)) '
        "/ ignoring(code) group_left() sum(rate(http_requests_total[5m]))")


def test_any_text_gives_a_tree_or_a_promql_error_never_another_exception():
    rng = random.Random(5)
    pieces = list("(){}[],:=!~\"'`@#-+*/%^<> \n\t0123456789.exXabms_") + [
        "sum", "by", "on", "offset", "rate", "group_left", "bool", "inf", "\\", "\\x", "\\u",
        "é", "\udc80", "\ufffd", "namespace", "__name__", "start()", "5m", "[5m:1m]"]
    corpus = VALID + generated_queries(100, seed=6)
    outcomes = set()
    for _ in range(3000):
        if rng.random() < 0.5:
            text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 30)))
        else:
            text = rng.choice(corpus)
            at = rng.randrange(len(text) + 1)
            text = text[:at] + rng.choice(pieces) + text[at + rng.randrange(3):]
        try:
            parse(text)
            outcomes.add("tree")
        except PromQLError as exc:
            assert str(exc)
            outcomes.add("refused")
    assert outcomes == {"tree", "refused"}
