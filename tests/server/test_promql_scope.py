"""Namespace scope for PromQL, in-process: scope_query's rewrite and refusals, check_series on
answers of every shape. (test_promql_prometheus.py runs the rewritten queries on the real
Prometheus.)"""

import pytest

from mcp_kubectl_server.digests.promql import PromQLError, check_series, parse, scope_query
from mcp_kubectl_server.digests.promql_ast import VectorSelector, walk
from tests.server.promql_corpus import VALID, generated_queries


@pytest.mark.parametrize("query, scoped", [
    ("up", 'up{namespace="prod"}'),
    ('{__name__=~"http_.*"}', '{__name__=~"http_.*", namespace="prod"}'),
    ("rate(http_requests_total[5m])", 'rate(http_requests_total{namespace="prod"}[5m])'),
    ("sum by (pod) (rate(x{code=~'5..'}[5m]))",
     'sum by (pod) (rate(x{code=~"5..", namespace="prod"}[5m]))'),
    ("max_over_time(rate(x[5m])[1h:1m] offset 5m)",
     'max_over_time(rate(x{namespace="prod"}[5m])[1h:1m] offset 5m)'),
    ("a / on(pod) group_left(node) b", 'a{namespace="prod"} / on(pod) group_left(node) '
                                       'b{namespace="prod"}'),
    ("absent(nope)", 'absent(nope{namespace="prod"})'),
    ("up or on() vector(1)", 'up{namespace="prod"} or on() vector(1)'),
    ('x{namespace="prod"}', 'x{namespace="prod"}'),
    ("x{namespace='prod', pod=\"a\"}", 'x{namespace="prod", pod="a"}'),
    ('x{namespace="pr\\x6fd"}', 'x{namespace="prod"}'),
    ("time() - 1", "time() - 1"),
    ('label_replace(x, "src_namespace", "$1", "namespace", "(.*)")',
     'label_replace(x{namespace="prod"}, "src_namespace", "$1", "namespace", "(.*)")'),
    ('count_values("value", x)', 'count_values("value", x{namespace="prod"})'),
    ("x @ start() # {namespace='staging'}", 'x{namespace="prod"} @ start()'),
])
def test_every_selector_gets_the_namespace(query, scoped):
    assert scope_query(query, "prod") == scoped


def test_over_the_corpus_every_selector_of_the_rewrite_is_in_the_namespace():
    checked = 0
    for query in VALID + generated_queries(300, seed=7):
        try:
            scoped = scope_query(query, "team-a")
        except PromQLError:
            continue
        selectors = [n for n in walk(parse(scoped)) if isinstance(n, VectorSelector)]
        assert len(selectors) == sum(isinstance(n, VectorSelector) for n in walk(parse(query)))
        for sel in selectors:
            ns = [(m.op, m.value) for m in sel.matchers if m.name == "namespace"]
            assert ns == [("=", "team-a")], (query, scoped)
        checked += len(selectors)
    assert checked > 500


@pytest.mark.parametrize("query", [
    'x{namespace="staging"}', 'x{namespace=~"prod"}', 'x{namespace=~"prod|staging"}',
    'x{namespace=~".*"}', 'x{namespace=~".+"}', 'x{namespace!="prod"}', 'x{namespace!=""}',
    'x{namespace!~"prod"}', 'x{namespace=""}', 'x{namespace="Prod"}', 'x{namespace="prod "}',
    'x{namespace="prod\\x00"}', 'x{namespace="prod", namespace="staging"}',
    'x{namespace="prod", namespace=~".*"}', '{__name__=~".+", namespace=~".+"}',
    'rate(x{namespace="kube-system"}[5m])', 'x{namespace="prod"} or y{namespace="staging"}',
    'max_over_time(x{namespace!="prod"}[1h:1m])', 'sum(x) + on() group_left y{namespace=~"."}',
    'absent(x{namespace="vault"})', 'x{namespace=`staging`}', "x{namespace='kube-system'}",
])
def test_a_query_that_constrains_the_namespace_otherwise_is_refused(query):
    with pytest.raises(PromQLError, match='adds namespace="prod" to every selector'):
        scope_query(query, "prod")


@pytest.mark.parametrize("query", [
    'label_replace(x, "namespace", "staging", "", "")',
    'label_replace(x, ("namespace"), "$1", "pod", "(.*)")',
    'label_replace(x, ((`namespace`)), "$1", "pod", "(.*)")',
    "label_replace(x, 'name\\x73pace', 'staging', '', '')",
    'sum(label_replace(rate(x[5m]), "namespace", "a", "", ""))',
    'label_join(x, "namespace", ",", "pod")',
    'label_join(x, "namespace", "")',
    'x or on() label_join(vector(1), "namespace", "-", "a", "b")',
])
def test_a_function_that_writes_the_namespace_label_is_refused(query):
    with pytest.raises(PromQLError, match="may not write the 'namespace' label"):
        scope_query(query, "prod")


def test_count_values_naming_its_label_namespace_is_refused():
    for query in ('count_values("namespace", x)', "count_values(('namespace'), x) by (pod)"):
        with pytest.raises(PromQLError, match="count_values"):
            scope_query(query, "prod")


def test_a_query_that_does_not_parse_is_refused_with_the_parser_message():
    with pytest.raises(PromQLError, match="PromQL parse error at 1:5: unclosed left paren"):
        scope_query("sum(", "prod")
    with pytest.raises(PromQLError, match="a namespace is required"):
        scope_query("up", "")


def test_the_namespace_is_quoted_into_the_query_whatever_it_holds():
    assert scope_query("up", 'a"b\\c') == 'up{namespace="a\\"b\\\\c"}'
    assert parse(scope_query("up", 'a"b\\c')).matchers[0].value == 'a"b\\c'


def test_label_names_that_only_look_like_namespace_are_other_labels():
    assert scope_query('x{Namespace="staging"}', "prod") == \
        'x{Namespace="staging", namespace="prod"}'
    assert scope_query('label_replace(x, "exported_namespace", "s", "", "")', "prod").startswith(
        'label_replace(x{namespace="prod"}')


def vector(*label_sets):
    return {"resultType": "vector",
            "result": [{"metric": labels, "value": [1, "1"]} for labels in label_sets]}


def test_check_series_passes_series_of_the_namespaces_in_scope():
    check_series(vector({"namespace": "prod", "pod": "a"}, {"namespace": "dev"}), ["prod", "dev"])
    check_series(vector(), ["prod"])
    matrix = {"resultType": "matrix", "result": [{"metric": {"namespace": "prod"},
                                                  "values": [[1, "1"]]}]}
    check_series(matrix, {"prod"})
    check_series({"status": "success", "data": vector({"namespace": "prod"})}, "prod")
    check_series([{"__name__": "up", "namespace": "prod"}], ("prod",))


def test_check_series_refuses_a_series_that_dropped_the_namespace_label():
    with pytest.raises(PromQLError, match=r"without a namespace label .*by \(namespace, pod\)"):
        check_series(vector({"namespace": "prod"}, {"pod": "a"}), ["prod"])
    with pytest.raises(PromQLError, match="without a namespace label"):
        check_series(vector({}), ["prod"])


def test_check_series_refuses_another_namespace_without_naming_it():
    with pytest.raises(PromQLError, match="outside this query's scope") as caught:
        check_series(vector({"namespace": "prod"}, {"namespace": "kube-system"}), ["prod"])
    assert "kube-system" not in str(caught.value)
    with pytest.raises(PromQLError, match="outside"):
        check_series(vector({"namespace": "prod"}), "pro")  # a string is one namespace


@pytest.mark.parametrize("kind", ["scalar", "string"])
def test_check_series_refuses_scalars_and_strings_with_the_way_to_keep_the_label(kind):
    with pytest.raises(PromQLError, match=f"returns a {kind}.*by \\(namespace, pod\\)"):
        check_series({"resultType": kind, "result": [1, "1"]}, ["prod"])


@pytest.mark.parametrize("answer", [
    {"resultType": "streams", "result": []}, {"resultType": "vector"}, "text", None,
    {"resultType": "vector", "result": ["x"]}, {"resultType": "vector", "result": [{"metric": 1}]},
])
def test_check_series_refuses_an_answer_it_cannot_read(answer):
    with pytest.raises(PromQLError):
        check_series(answer, ["prod"])
