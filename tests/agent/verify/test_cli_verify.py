"""The verification end to end: the real CLI, MCP server, kubectl and simulator, with the strict
fake Messages API for live runs (a review by default) and the replays that carry an answer
(--verify). What the operator sees: the opening Checked line, the confidence after checking,
the sections, the same in --json; a review that fails never changes the exit code."""

import json

from tests.agent.cli.test_cli import replay_args, run_cli, run_cli_here
from tests.agent.cli.test_live import crashloop_responses, failure, live
from tests.support.fake_messages_api import FakeMessagesApi, error_body, strict_schema_problems

DEMO_LINE = ("Checked: 3 of 3 claims found in the evidence; review: partly supported (1 claim "
             "unsupported); the proposed actions do not follow from the evidence")


def test_the_demo_opens_with_its_check_line(shared_sim):
    out = run_cli(*replay_args(shared_sim("injection"), "crashloop-injection", "--verify"))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == DEMO_LINE and lines[1] == "SEVERITY: HIGH"
    assert "Hypothesis (confidence: medium, lowered from high: review: 1 claim unsupported)" \
        in lines
    sections = [line for line in lines if line and not line.startswith(" ")]
    assert sections.index("Hypothesis (confidence: medium, lowered from high: review: 1 claim "
                          "unsupported)") < sections.index("Claims the review flagged") \
        < sections.index("Blind spots (what this run could not see)") \
        < sections.index("Proposed actions (for a human to review; listing one runs nothing)")
    assert "  ! crashed container in pod prod/checkout-6f8d9c7b5d-m4q9z: its previous logs " \
           "were never read" in lines
    assert "[audit] step 4 · review_report · reviewed · verdict=partly_supported" in out.stderr


def test_json_carries_the_same_verification_and_the_report_as_written(shared_sim):
    sim = shared_sim("injection")
    out = run_cli_here(*replay_args(sim, "crashloop-injection", "--verify", "--json"))
    plain = run_cli_here(*replay_args(sim, "crashloop-injection", "--json"))
    assert out.returncode == plain.returncode == 0, out.stderr
    reviewed, not_reviewed = json.loads(out.stdout), json.loads(plain.stdout)
    assert reviewed["report"] == not_reviewed["report"]   # the review never changes the report
    assert reviewed["report"]["confidence"] == "high"
    verification = reviewed["verification"]
    assert verification["review"]["verdict"] == "partly_supported"
    assert verification["confidence"] == "medium" and verification["reviewed"] is True
    assert reviewed["steps"] == not_reviewed["steps"] == 4            # not a step
    assert reviewed["usage"]["input"] - not_reviewed["usage"]["input"] == 4500   # but counted
    assert reviewed["cost_usd"] > not_reviewed["cost_usd"]
    assert not_reviewed["verification"]["not_reviewed_because"].startswith("turned off")


def test_a_live_run_reviews_by_default_through_one_strict_tool(shared_sim):
    with FakeMessagesApi(crashloop_responses()) as api:
        out = live(api, shared_sim("crashloop"), "--json")
    assert out.returncode == 0, out.stderr
    review = api.requests[-1]["body"]
    assert [t["name"] for t in review["tools"]] == ["review_report"]
    assert review["tools"][0]["strict"] is True
    assert strict_schema_problems(review["tools"][0]["input_schema"]) == []
    assert len(review["messages"]) == 1 and "write_report" not in json.dumps(review["tools"])
    outcome = json.loads(out.stdout)
    assert outcome["verification"]["review"]["verdict"] == "supported"
    assert outcome["steps"] == 4 and len(api.requests) == 5


def test_no_verify_makes_no_review(shared_sim):
    with FakeMessagesApi(crashloop_responses(review=False)) as api:
        out = live(api, shared_sim("crashloop"), "--json", "--no-verify")
    assert out.returncode == 0, out.stderr
    assert len(api.requests) == 4 and api.script == []
    verification = json.loads(out.stdout)["verification"]
    assert verification["reviewed"] is False and verification["claims"]["checked"] == 3


def test_a_review_the_api_refuses_keeps_the_report_and_the_exit_code(shared_sim):
    bad = {"status": 400, "body": error_body(400, "invalid_request_error", "no", "x")}
    with FakeMessagesApi(crashloop_responses(review=False) + [bad]) as api:
        out = live(api, shared_sim("crashloop"))
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("Checked: 3 of 3 claims found in the evidence; review: not made "
                            "(model API error (HTTP 400) invalid_request_error: no")
    assert "Hypothesis (confidence: high)" in out.stdout and "review_failed" in out.stderr


def test_a_review_that_keeps_failing_over_http_is_retried_then_given_up(shared_sim):
    script = crashloop_responses(review=False) + [failure(529, "overloaded_error")] * 3
    with FakeMessagesApi(script) as api:
        out = live(api, shared_sim("crashloop"), "--json")
    assert out.returncode == 0, out.stderr
    verification = json.loads(out.stdout)["verification"]
    assert "overloaded_error" in verification["not_reviewed_because"]
    assert len(api.requests) == 7   # four steps, then the review tried three times


def test_the_budget_that_cannot_pay_for_the_review_skips_it(shared_sim):
    with FakeMessagesApi(crashloop_responses()) as api:
        out = live(api, shared_sim("crashloop"), "--json", "--max-cost-usd", "0.0665")
    assert out.returncode == 0, out.stderr
    outcome = json.loads(out.stdout)
    assert outcome["stop"] == "report" and len(api.requests) == 4
    assert "--max-cost-usd 0.0665" in outcome["verification"]["not_reviewed_because"]


def test_verify_and_no_verify_cannot_both_be_given(shared_sim):
    out = run_cli_here(*replay_args(shared_sim("crashloop"), "crashloop", "--verify",
                                    "--no-verify"))
    assert out.returncode == 2 and "not allowed with argument" in out.stderr
