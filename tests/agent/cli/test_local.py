"""The real CLI against fakes of self-hosted servers (tests/support/fake_local_api.py), the real MCP
server, kubectl and kube_sim: llama-server and Ollama, streamed and plain, no key, the compatible
profile by default, a failed or refused tool call shown to the model as an error in words, and
prices for a model the table does not know."""

import json

import pytest

from tests.support.fake_local_api import FakeLocalApi
from tests.agent.cli.test_cli import FATAL, REPLAY, run_cli_here

LOCAL_MODEL = "qwen3-4b-instruct"
POD = "checkout-6f8d9c7b5d-x7k2p"


def script():
    """The crashloop replay, after a first turn whose two calls fail: one refused by the loop
    (out of scope), one failed by the server (no such pod)."""
    responses = json.loads((REPLAY / "crashloop.json").read_text())["responses"]
    failing = {"content": [
        {"type": "tool_use", "id": "call_a", "name": "get_pods",
         "input": {"namespace": "kube-system"}},
        {"type": "tool_use", "id": "call_b", "name": "get_logs",
         "input": {"namespace": "prod", "name": "no-such-pod"}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": 3000, "output_tokens": 40}}
    return [failing] + responses


def local_run(api, sim, *extra, env=None):
    return run_cli_here("checkout pods in prod keep restarting", "--namespaces", "prod",
                        "--kubeconfig", sim.kubeconfig, "--no-preflight", "--model", LOCAL_MODEL,
                        *extra, env=dict({"ANTHROPIC_BASE_URL": api.url}, **(env or {})))


@pytest.mark.parametrize("server, stream", [("llama", True), ("llama", False),
                                            ("ollama", True), ("ollama", False)])
def test_a_triage_against_a_local_server_keeps_its_promises(shared_sim, server, stream):
    with FakeLocalApi(script(), server=server) as api:
        out = local_run(api, shared_sim("crashloop"), "--json", "--price-per-mtok", "0,0",
                        "--max-cost-usd", "0.01", *([] if stream else ["--no-stream"]))
    assert out.returncode == 0, out.stderr
    outcome = json.loads(out.stdout)
    assert outcome["stop"] == "report" and FATAL in json.dumps(outcome["report"])
    # the investigation's output tokens (1,220) and the review's (520): a live run reviews
    assert outcome["cost_usd"] == 0 and outcome["usage"]["output"] == 1220 + 520
    assert "$0 (priced at zero by --price-per-mtok 0,0" in out.stderr
    assert len(api.requests) == 6 and outcome["verification"]["reviewed"] is True
    for request in api.requests:
        assert request["ignored"] == [] and request["body"].get("stream", False) is stream
        assert isinstance(request["body"]["system"], str)
        assert "x-api-key" not in {k.lower() for k in request["headers"]}
    results = [said for who, said in api.requests[1]["seen"]["turns"] if who == "tool"]
    assert len(results) == 2 and all(r.startswith("ERROR: ") for r in results)
    assert "kube-system" in results[0] and "no-such-pod" in results[1]


def test_without_prices_the_cost_is_unknown_and_a_cost_limit_cannot_start(shared_sim):
    sim = shared_sim("crashloop")
    with FakeLocalApi(script(), server="llama") as api:
        out = local_run(api, sim)
        refused = local_run(api, sim, "--max-cost-usd", "1")
    assert out.returncode == 0, out.stderr
    assert f"$ unknown (no price for '{LOCAL_MODEL}'" in out.stderr
    assert "give --price-per-mtok or --prices-file" in out.stderr
    assert refused.returncode == 2 and "--max-cost-usd: no price is known" in refused.stderr


def test_a_prices_file_prices_the_model_and_the_limit_stops_the_run(shared_sim, tmp_path):
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({LOCAL_MODEL: {"input": 100, "output": 100}}))
    with FakeLocalApi(script(), server="ollama") as api:
        out = local_run(api, shared_sim("crashloop"), "--json", "--prices-file", str(prices),
                        "--max-cost-usd", "0.5")
    outcome = json.loads(out.stdout)
    # 3,040 tokens at $100 a million is $0.304; the next call's input alone would pass $0.5
    assert out.returncode == 3 and outcome["stop"] == "max_cost", out.stderr
    assert outcome["cost_usd"] == pytest.approx(0.304) and len(api.requests) == 1
    assert f"(prices of --prices-file {prices})" in out.stderr


def test_a_bearer_token_and_the_hosted_profile_on_request(shared_sim):
    with FakeLocalApi(script(), server="llama", token="tok") as api:
        out = local_run(api, shared_sim("crashloop"), "--api-profile", "anthropic",
                        env={"ANTHROPIC_AUTH_TOKEN": "tok"})
    assert out.returncode == 0, out.stderr
    first = api.requests[0]
    assert first["headers"]["Authorization"] == "Bearer tok"
    assert set(first["ignored"]) == {"fallbacks", "output_config", "cache_control", "strict",
                                     "anthropic-beta"}   # what the hosted profile would lose


@pytest.mark.parametrize("flags, env, words", [
    ([], {"ANTHROPIC_BASE_URL": ""}, "ANTHROPIC_API_KEY is not set"),
    (["--base-url", "ftp://x"], {}, "give an http:// or https:// URL"),
    (["--price-per-mtok", "1"], {}, "give INPUT,OUTPUT"),
    (["--price-per-mtok", "1,-2"], {}, "is not a price"),
    (["--prices-file", "/nonexistent/prices.json"], {}, "--prices-file: cannot read"),
    (["--api-profile", "openai"], {}, "invalid choice: 'openai'"),
])
def test_bad_endpoint_options_are_usage_errors(flags, env, words):
    out = run_cli_here("pods restart", "--namespaces", "prod", *flags,
                       env=dict({"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}, **env))
    assert out.returncode == 2 and words in out.stderr and "Traceback" not in out.stderr
