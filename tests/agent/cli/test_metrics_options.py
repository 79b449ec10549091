"""The CLI's --prometheus-* options and the preflight's Prometheus check.

The options go to the default server only (PROMETHEUS_URL when --prometheus-url is not given);
the preflight asks the server's list_metrics when it offers the metrics tools, and a Prometheus
that does not answer ends the run before any model call, through the real CLI and server.
"""

import json

import pytest

from tests.agent.cli.test_preflight import live
from triage_agent import preflight
from triage_agent.options import UsageError, build_parser, check_options, server_argv


def options(*argv, env=None, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.delenv("PROMETHEUS_URL", raising=False)
    for key, value in (env or {}).items():
        monkeypatch.setenv(key, value)
    args = build_parser().parse_args(["symptom", "--namespaces", "prod", *argv])
    return args, check_options(args)


def test_the_flags_go_to_the_default_server(monkeypatch, tmp_path):
    token = tmp_path / "token"
    token.write_text("t")
    args, namespaces = options("--prometheus-url", "https://prom:9090", "--prometheus-token-file",
                               str(token), monkeypatch=monkeypatch)
    argv = server_argv(args, namespaces)
    assert argv[argv.index("--prometheus-url") + 1] == "https://prom:9090"
    assert argv[argv.index("--prometheus-token-file") + 1] == str(token)
    args, namespaces = options("--prometheus-service", "monitoring/prometheus:9090", monkeypatch=monkeypatch)
    assert server_argv(args, namespaces)[-2:] == ["--prometheus-service", "monitoring/prometheus:9090"]


def test_prometheus_url_comes_from_the_environment(monkeypatch):
    args, namespaces = options(env={"PROMETHEUS_URL": "http://p:9090"}, monkeypatch=monkeypatch)
    assert server_argv(args, namespaces)[-2:] == ["--prometheus-url", "http://p:9090"]
    args, namespaces = options("--mcp", "my-server", env={"PROMETHEUS_URL": "http://p:9090"},
                               monkeypatch=monkeypatch)
    assert server_argv(args, namespaces) == ["my-server"]  # another server: not ours to configure
    args, namespaces = options(monkeypatch=monkeypatch)
    assert "--prometheus-url" not in server_argv(args, namespaces)


@pytest.mark.parametrize("argv, message", [
    (("--mcp", "x", "--prometheus-url", "http://p"), "--prometheus-url configures this project's server"),
    (("--prometheus-url", "http://p", "--prometheus-service", "m/p:9090"), "give one"),
    (("--prometheus-token-file", "/etc/hostname"), "goes with --prometheus-url"),
    (("--prometheus-url", "http://p", "--prometheus-ca", "/no/such/ca.pem"), "no such file"),
])
def test_bad_combinations_are_usage_errors(monkeypatch, argv, message):
    with pytest.raises(UsageError, match=message):
        options(*argv, monkeypatch=monkeypatch)


class Tools:
    """A server's tools seam: get_pods lists pods, list_metrics answers as scripted."""

    def __init__(self, metrics=None):
        self.metrics, self.calls = metrics, []

    def list(self):
        names = ["get_pods"] + (["list_metrics"] if self.metrics else [])
        return [{"name": name} for name in names]

    def call(self, name, arguments):
        self.calls.append((name, arguments))
        return ("pods in prod: 1" , False) if name == "get_pods" else self.metrics


def test_the_preflight_asks_prometheus_only_when_the_server_has_it():
    tools = Tools()
    assert preflight.run_preflight(tools, ["prod"]).prometheus == ""
    assert [name for name, _ in tools.calls] == ["get_pods"]
    tools = Tools(("metrics with series in prod over the last 60 min: 3 names, 9 series\nx 1", False))
    found = preflight.run_preflight(tools, ["prod", "staging"])
    assert found.prometheus == "metrics with series in prod over the last 60 min: 3 names, 9 series"
    assert tools.calls[-1] == ("list_metrics", {"match": "container_", "namespace": "prod"})


def test_a_prometheus_that_does_not_answer_fails_the_preflight():
    tools = Tools(("cannot reach Prometheus at http://p:9090 (Connection refused): it is down", True))
    with pytest.raises(preflight.PreflightError) as caught:
        preflight.run_preflight(tools, ["prod"])
    assert caught.value.cause.startswith("Prometheus: cannot reach Prometheus at http://p:9090")
    assert "--prometheus-url" in caught.value.advice


def test_the_cli_says_prometheus_answered_or_stops_before_the_model(shared_sim):
    sim = shared_sim("throttled")
    out, outcome, requests = live("--namespaces", "prod", "--kubeconfig", sim.kubeconfig,
                                  "--prometheus-url", sim.prometheus.url)
    line = next(l for l in out.stderr.splitlines() if "Prometheus answered" in l)
    assert line.startswith("triage-agent: preflight: Prometheus answered: metrics with series in prod")
    assert "(from Prometheus 2.42.0" in line and requests > 0
    out, outcome, requests = live("--namespaces", "prod", "--kubeconfig", sim.kubeconfig,
                                  "--prometheus-url", "http://127.0.0.1:9")
    assert (out.returncode, outcome["stop"], requests) == (2, "preflight_failed", 0)
    assert "preflight failed: Prometheus: cannot reach Prometheus at http://127.0.0.1:9" in out.stderr
    assert json.dumps(outcome).count("--prometheus-url") >= 1
