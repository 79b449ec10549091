"""The metrics tools in process, against a scripted Prometheus client: argument checks, scope
before sending (the query the client receives), the answer checks after, and the guards that
refuse an answer with another namespace's series."""

import pytest

from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.tools import metrics
from mcp_kubectl_server.tools.spec import check_arguments

TOOLS = {tool.name: tool for tool in metrics.TOOLS}
END = 1_796_000_000.0


class ScriptedPrometheus:
    """Answers every api() call with `answer(endpoint, params)` and records what it was asked."""

    def __init__(self, answer):
        self.answer, self.asked = answer, []

    def api(self, endpoint, params=None, *, reader=None):
        self.asked.append((endpoint, dict(params or {})))
        return self.answer(endpoint, params)

    def describe(self):
        return "Prometheus at http://scripted"


class View:
    def __init__(self, prometheus):
        self.prometheus = prometheus


def matrix(*metrics_):
    return lambda endpoint, params: {"resultType": "matrix", "result": [
        {"metric": m, "values": [[END - 60 * i, "1"] for i in range(5, -1, -1)]} for m in metrics_]}


@pytest.mark.parametrize("tool, arguments, message", [
    ("get_metrics", {"namespace": "prod", "workload": "CronJob/x"}, "is not KIND/NAME"),
    ("get_metrics", {"namespace": "prod", "workload": "Deployment/Web"}, "is not KIND/NAME"),
    ("get_metrics", {"namespace": "prod", "pod": "-x"}, "pod: '-x' is not a valid name"),
    ("get_metrics", {"namespace": "prod", "pod": "a", "window_minutes": 2}, "from 5 to 1440"),
    ("get_metrics", {"namespace": "prod", "pod": "a", "window_minutes": True}, "whole number"),
    ("query_metrics", {"namespace": "prod", "promql": "  "}, "give a PromQL expression"),
    ("query_metrics", {"namespace": "prod", "promql": "x" * 2001}, "at most 2000 characters"),
    ("query_metrics", {"namespace": "prod", "promql": "up", "minutes": 0}, "from 1 to 1440"),
    ("query_metrics", {"namespace": "prod", "promql": "up", "step_seconds": 3601}, "from 1 to 3600"),
    ("query_metrics", {"namespace": "prod"}, "promql: is required"),
    ("list_metrics", {"namespace": "prod", "match": "a.*b"}, "part of a metric name"),
    ("list_metrics", {"namespace": "prod", "match": "x\"}"}, "part of a metric name"),
])
def test_bad_arguments_are_refused_before_any_read(tool, arguments, message):
    problems = check_arguments(TOOLS[tool], arguments)
    assert any(message in p for p in problems), problems


def test_query_metrics_sends_the_scoped_query_and_refuses_a_conflicting_one():
    prom = ScriptedPrometheus(matrix({"namespace": "prod", "code": "500"}))
    text = metrics.query_metrics(View(prom), {"namespace": "prod", "promql": 'rate(x{code="500"}[5m])',
                                              "minutes": 30})
    endpoint, params = prom.asked[0]
    assert endpoint == "query_range" and params["step"] == "30"
    assert 'namespace="prod"' in params["query"] and text.splitlines()[1] == "sent: " + params["query"]
    with pytest.raises(ReadError, match="query refused"):
        metrics.query_metrics(View(prom), {"namespace": "prod", "promql": 'x{namespace=~"prod|kube-system"}'})
    with pytest.raises(ReadError, match="query refused"):
        metrics.query_metrics(View(prom), {"namespace": "prod", "promql": "sum(rate(x[5m]"})
    assert len(prom.asked) == 1  # nothing refused was sent


@pytest.mark.parametrize("answer, words", [
    (matrix({"namespace": "staging", "pod": "a"}), "outside this query's scope"),
    (matrix({"pod": "a"}), "by (namespace"),
    (lambda e, p: {"resultType": "scalar", "result": [END, "1"]}, "returns a scalar"),
])
def test_answers_outside_the_namespace_are_refused(answer, words):
    with pytest.raises(ReadError) as caught:
        metrics.query_metrics(View(ScriptedPrometheus(answer)), {"namespace": "prod", "promql": "up"})
    assert str(caught.value).startswith("answer refused") and words in str(caught.value)
    assert "staging" not in str(caught.value)


def test_too_many_points_say_which_step_would_do():
    with pytest.raises(ReadError, match="use step_seconds >= 87"):
        metrics.query_metrics(View(ScriptedPrometheus(matrix())), {"namespace": "prod", "promql": "up",
                                                                   "minutes": 1440, "step_seconds": 15})


def test_list_metrics_asks_for_the_namespace_and_refuses_strays():
    prom = ScriptedPrometheus(lambda e, p: [{"__name__": "http_requests_total", "namespace": "prod"}])
    text = metrics.list_metrics(View(prom), {"namespace": "prod", "match": "http"})
    assert prom.asked[0][1]["match[]"] == '{__name__=~".*http.*", namespace="prod"}'
    assert text.startswith("metrics with series in prod over the last 60 min matching 'http': 1 names")
    stray = ScriptedPrometheus(lambda e, p: [{"__name__": "x", "namespace": "staging", "api_key": "sk"}])
    with pytest.raises(ReadError, match="1 series outside namespace prod came back"):
        metrics.list_metrics(View(stray), {"namespace": "prod"})


def test_get_metrics_needs_exactly_one_subject_and_a_prometheus():
    view = View(ScriptedPrometheus(matrix()))
    for arguments in ({"namespace": "prod"}, {"namespace": "prod", "pod": "a", "workload": "Job/b"}):
        with pytest.raises(ReadError, match="give exactly one of pod"):
            metrics.get_metrics(view, arguments)
    with pytest.raises(ReadError, match="this server has no Prometheus"):
        metrics.get_metrics(View(None), {"namespace": "prod", "pod": "a"})


def test_get_metrics_queries_name_the_namespace_and_escape_pod_names():
    prom = ScriptedPrometheus(lambda e, p: {"resultType": "vector" if e == "query" else "matrix", "result": []})
    text = metrics.get_metrics(View(prom), {"namespace": "prod", "pod": "web.v2-1"})
    assert len(prom.asked) == 5
    for _, params in prom.asked:
        assert 'namespace="prod"' in params["query"] and 'pod=~"web\\\\.v2-1"' in params["query"]
    assert "pod web.v2-1: no cAdvisor and no kube-state-metrics series" in text
