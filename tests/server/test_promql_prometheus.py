"""The PromQL parser and namespace scope against the real Prometheus 2.42 (tests/support/
prometheus.py): one Prometheus per data set for the session, many queries each.

- Fidelity: over the hand-written corpora, generated and mutated queries, the parser accepts
  exactly what Prometheus accepts (save the known differences below), and for every query
  Prometheus accepts, it accepts the rewritten query too.
- Scope: every reach-around query (tests/server/promql_reach.py) is either refused or
  answered by the Prometheus that holds every namespace exactly as by one that holds prod's
  series alone, so no value of another namespace reaches the answer; the same queries left
  unscoped do reach other namespaces (the test can fail).
"""

import json
from collections import Counter

import pytest

from mcp_kubectl_server.digests.promql import (PromQLError, check_series, parse, render,
                                               scope_query)
from tests.server.promql_corpus import INVALID, VALID, generated_queries, mutated_queries
from tests.server.promql_edges import EDGES
from tests.server.promql_reach import MARKERS, NAMESPACE, PROD_SERIES, REACH_AROUND, SERIES
from tests.support.prometheus import Series, start_prometheus

# Where this parser and Prometheus 2.42 differ, by design: Prometheus compiles regexes with
# Go's RE2 (the parser leaves them to it), and lexes any letter inside brackets as ':'
# (`x[5m a]` is `x[5m:]` to it; the parser refuses it).
KNOWN = ("error parsing regexp", "inside brackets")


@pytest.fixture(scope="module")
def prom(prometheus_servers):
    return prometheus_servers("promql-all-namespaces", SERIES)


@pytest.fixture(scope="module")
def prom_prod(prometheus_servers):
    return prometheus_servers("promql-prod-only", PROD_SERIES)


def prometheus_verdict(prom, query):
    """None when Prometheus parses the query, else its parse error."""
    status, body = prom.query(query)
    if status == 400 and isinstance(body, dict) and body.get("errorType") == "bad_data":
        return body["error"]
    assert status in (200, 422), (query, status, body)
    return None


def parser_verdict(query):
    try:
        parse(query)
    except PromQLError as exc:
        return str(exc)
    return None


def disagreements(prom, queries):
    """(query, Prometheus's verdict, ours) where one accepts and the other refuses, and the
    rewritten queries Prometheus refuses; also how many both accepted."""
    differ, rewrites_refused, accepted = [], [], 0
    for query in queries:
        theirs, ours = prometheus_verdict(prom, query), parser_verdict(query)
        if (theirs is None) != (ours is None):
            if not any(k in (theirs or "") + (ours or "") for k in KNOWN):
                differ.append((query, theirs, ours))
        elif theirs is None:
            accepted += 1
            scoped = scope_query(query, NAMESPACE)
            refusal = prometheus_verdict(prom, scoped)
            if refusal:
                rewrites_refused.append((query, scoped, refusal))
    return differ, rewrites_refused, accepted


@pytest.mark.slow(reason="the first test of the module starts its Prometheus servers")
def test_prometheus_and_the_parser_accept_every_valid_query_and_its_rewrite(prom, prom_prod):
    assert disagreements(prom, VALID) == ([], [], len(VALID))


def test_prometheus_and_the_parser_refuse_every_invalid_query(prom):
    assert [q for q in INVALID if prometheus_verdict(prom, q) is None] == []
    assert [q for q in INVALID if parser_verdict(q) is None] == []


def test_odd_corners_are_judged_alike_and_their_rewrites_accepted(prom):
    differ, rewrites_refused, accepted = disagreements(prom, EDGES)
    assert differ == [] and rewrites_refused == []
    assert 60 < accepted < len(EDGES) - 60


def test_generated_queries_are_judged_alike_and_their_rewrites_accepted(prom):
    differ, rewrites_refused, accepted = disagreements(prom, generated_queries(500, seed=42))
    assert differ == [] and rewrites_refused == []
    assert accepted > 400


def test_mutated_queries_are_judged_alike(prom):
    queries = mutated_queries(VALID + generated_queries(200, seed=43), 600, seed=44)
    differ, rewrites_refused, accepted = disagreements(prom, queries)
    assert differ == [] and rewrites_refused == []
    assert 30 < accepted < 500   # mutations leave some queries valid and break most


def test_the_canonical_rendering_answers_as_the_query_itself(prom):
    compared = 0
    for query in VALID + generated_queries(300, seed=45):
        if prometheus_verdict(prom, query) is None:
            canonical = render(parse(query))
            assert normalized(*prom.query(canonical)) == normalized(*prom.query(query)), query
            compared += 1
    assert compared > 500


def test_the_scoped_query_answers_over_every_namespace_as_the_query_over_prod_alone(
        prom, prom_prod):
    # over prod's series alone, namespace="prod" matches everything, so adding it changes
    # nothing there; absent() is left out, as its answer carries the matchers it was given
    compared = 0
    for query in VALID + generated_queries(300, seed=46):
        if "absent" in query or prometheus_verdict(prom, query) is not None:
            continue
        scoped = scope_query(query, NAMESPACE)
        assert normalized(*prom.query(scoped)) == normalized(*prom_prod.query(query)), query
        compared += 1
    assert compared > 500


def normalized(status, body):
    """An answer with its series in a stable order, for comparing two Prometheus servers."""
    if not isinstance(body, dict) or body.get("status") != "success":
        return status, body
    data = body["data"]
    result = data["result"]
    if data["resultType"] in ("vector", "matrix"):
        result = sorted(result, key=lambda item: json.dumps(item, sort_keys=True))
    return status, data["resultType"], result


def leaks(query, prom, prom_prod):
    """Whether a query, sent as it is, answers differently with other namespaces present."""
    return normalized(*prom.query(query)) != normalized(*prom_prod.query(query))


def test_the_reach_around_corpus_reaches_other_namespaces_when_left_unscoped(prom, prom_prod):
    assert len(REACH_AROUND) >= 200
    reaching = [q for _, q in REACH_AROUND if leaks(q, prom, prom_prod)]
    assert len(reaching) >= 150, len(reaching)


def run_scoped(query, prom, prom_prod):
    """'refused', 'answered' (in-scope series) or 'no series' (an answer check_series refuses
    or an empty one); asserts the answer is prod's alone."""
    try:
        scoped = scope_query(query, NAMESPACE)
    except PromQLError as exc:
        assert str(exc)
        return "refused"
    status, body = prom.query(scoped)
    assert normalized(status, body) == normalized(*prom_prod.query(scoped)), (query, scoped)
    text = json.dumps(body, ensure_ascii=False)
    for marker in MARKERS:
        assert marker in query or marker not in text, (query, marker)
    if status != 200:
        return "error"
    try:
        check_series(body["data"], [NAMESPACE])
    except PromQLError:
        return "no series"
    series = body["data"]["result"]
    assert all(item["metric"]["namespace"] == NAMESPACE for item in series)
    return "answered" if series else "no series"


CATEGORIES = sorted({category for category, _ in REACH_AROUND})


@pytest.mark.parametrize("category", CATEGORIES)
def test_no_reach_around_query_answers_with_another_namespace(category, prom, prom_prod):
    outcomes = Counter(run_scoped(q, prom, prom_prod) for c, q in REACH_AROUND if c == category)
    assert sum(outcomes.values()) > 0
    if category in ("forged label",):
        assert outcomes["refused"] >= 10
    if category == "namespace matcher":
        assert outcomes == Counter(refused=sum(outcomes.values()))


def test_scoped_queries_do_answer_with_the_namespace_series(prom, prom_prod):
    outcomes = Counter(run_scoped(q, prom, prom_prod) for _, q in REACH_AROUND)
    assert outcomes["answered"] >= 30 and outcomes["refused"] >= 130, outcomes


@pytest.mark.parametrize("query, verdict", [
    ("sum(rate(http_requests_total[5m]))", "without a namespace label"),
    ("sum by (namespace, pod) (rate(http_requests_total[5m]))", None),
    ("vector(1)", "without a namespace label"),
    ("scalar(up)", "returns a scalar"),
    ('"text"', "returns a string"),
    ("http_requests_total[5m]", None),
    ("label_replace(up, \"namespace\", \"\", \"\", \"\")", "may not write"),
])
def test_answers_that_lost_the_namespace_label_are_refused(query, verdict, prom):
    try:
        status, body = prom.query(scope_query(query, NAMESPACE))
        assert status == 200
        check_series(body, [NAMESPACE])
        assert body["data"]["result"]
    except PromQLError as exc:
        assert verdict and verdict in str(exc)
    else:
        assert verdict is None


def test_the_test_prometheus_scrapes_nothing_and_listens_on_loopback_only(prom):
    assert prom.url.startswith("http://127.0.0.1:")
    status, targets = prom.get("/api/v1/targets")
    assert status == 200 and targets["data"]["activeTargets"] == []
    status, config = prom.get("/api/v1/status/config")
    assert status == 200 and "scrape_configs" not in config["data"]["yaml"]
    status, build = prom.get("/api/v1/status/buildinfo")
    assert build["data"]["version"].startswith("2.42.")


def test_a_prometheus_started_for_a_test_serves_its_series_and_stops_at_its_end():
    series = [Series("ticks", {"namespace": "prod", "note": 'a "quoted" ✓'}, lambda age: -age,
                     minutes=10, ahead=10)]
    with start_prometheus(series) as server:
        process = server.process
        status, body = server.query("ticks", at=server.now + 300)
        assert status == 200 and body["data"]["result"] == [{
            "metric": {"__name__": "ticks", "namespace": "prod", "note": 'a "quoted" ✓'},
            "value": [server.now + 300, "300"]}]
    assert process.poll() is not None


def test_without_the_binaries_the_test_fails_saying_how_to_install_them(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match="make prometheus-deps"):
        start_prometheus(SERIES).__enter__()
