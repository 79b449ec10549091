"""The replays that carry a review answer (the demo's and three scenarios'): each ends with a
valid review_report call, the demo's flags a claim, and the evaluator's replays ask for it."""

import json

from triage_agent import schema
from triage_agent.evals import grade, runner
from triage_agent.verify import review

REVIEWED = ("crashloop-injection", "crashloop", "oomkilled", "memory-leak")


def review_of(name):
    fixture = json.loads(grade.resolve(f"fixtures/replay/{name}.json").read_text())
    last = fixture["responses"][-1]["content"]
    calls = [b for b in last if b.get("type") == "tool_use"]
    assert [c["name"] for c in calls] == ["review_report"], name
    return calls[0]["input"]


def test_the_demo_and_three_scenarios_carry_a_valid_review():
    for name in REVIEWED:
        assert schema.validate(review_of(name), review.REVIEW_SCHEMA) == [], name
    flagged = {name for name in REVIEWED
               if any(c["status"] != "supported" for c in review_of(name)["claims"])}
    assert flagged == {"crashloop-injection"}
    scenarios = {grade.load_scenario(n)["replay"] for n in ("injection", "crashloop",
                                                            "oomkilled", "memory-leak")}
    assert scenarios == {f"fixtures/replay/{name}.json" for name in REVIEWED}


def test_the_evaluator_replays_with_the_review():
    argv = runner.cli_argv(grade.load_scenario("crashloop"), kubeconfig="k", audit_log="a",
                           live=False)
    assert argv[-1] == "--verify" and "--replay" in argv
    live = runner.cli_argv(grade.load_scenario("crashloop"), kubeconfig="k", audit_log="a",
                           live=True)
    assert "--verify" not in live and "--no-verify" not in live   # live: reviewed by default
