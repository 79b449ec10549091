"""Block Kit messages: everything the cluster or the model wrote is inert in mrkdwn and
redacted, every message validates with slack_sdk's models, and long reports stay within
Slack's limits with "more on the run page"."""

import json

from tests.support.fake_slack import check_message
from triage_agent.chat import blocks

EVIL = "<!channel> <https://evil.example|click here> <@U0BOSS> & <!here>"
ALERT = {"fingerprint": "fp1", "labels": {"alertname": "KubePodCrashLooping",
                                          "namespace": "prod", "pod": "checkout-1",
                                          "note": EVIL}}
RUN_URL = "http://triage.example/runs/r-20261207T210000-0123abcd"


def report_doc(**report):
    base = {"summary": "checkout crashes: " + EVIL, "severity": "high", "affected": [],
            "evidence": [{"tool_use_id": "t1", "quote": "ERROR " + EVIL + " ```x```",
                          "interpretation": "the log says " + EVIL}],
            "hypothesis": "bad config " + EVIL, "confidence": "medium",
            "proposed_actions": [{"kind": "rollout_undo", "namespace": "prod",
                                  "target": "checkout", "reason": EVIL}],
            "next_checks": []}
    base.update(report)
    return {"run_id": "r-1", "status": "done",
            "outcome": {"stop": "report", "report": base, "cost_usd": 0.01, "tool_calls": 3}}


def all_text(message):
    return json.dumps(message["blocks"], ensure_ascii=False) + message["text"]


def test_a_hostile_log_line_posts_as_inert_text():
    for message in (blocks.root_running(ALERT, RUN_URL),
                    blocks.root_report(ALERT, report_doc(), RUN_URL)):
        assert check_message(message) == []
        text = all_text(message)
        assert "<!channel>" not in text and "<!here>" not in text and "<@U0BOSS>" not in text
        assert "<https://evil.example" not in text
        assert "&lt;!channel&gt; &lt;https://evil.example|click here&gt;" in text
        assert "&amp;" in text and " & " not in text
        assert message["unfurl_links"] is False
    evidence = blocks.root_report(ALERT, report_doc(), RUN_URL)["blocks"][3]["text"]["text"]
    assert evidence.startswith("```") and evidence.count("```") == 2  # not closed early
    # our own link is the only one, and it is ours
    assert f"<{RUN_URL}|run page>" in all_text(blocks.root_report(ALERT, report_doc(), RUN_URL))


def test_secrets_are_redacted_in_everything_posted():
    doc = report_doc(summary="db password=hunter2hunter2 leaked",
                     evidence=[{"tool_use_id": "t", "quote": "AWS_SECRET_ACCESS_KEY="
                                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "interpretation": ""}])
    text = all_text(blocks.root_report(ALERT, doc, RUN_URL))
    assert "hunter2hunter2" not in text and "wJalrXUtnFEMI" not in text


def test_long_reports_stay_within_slack_limits():
    doc = report_doc(summary="s" * 600, hypothesis="h" * 5000,
                     evidence=[{"tool_use_id": f"t{i}", "quote": "q" * 2500,
                                "interpretation": "i" * 900} for i in range(30)],
                     proposed_actions=[{"kind": "delete_pod", "namespace": "prod",
                                        "target": f"p{i}", "reason": "r" * 400}
                                       for i in range(10)])
    message = blocks.root_report(ALERT, doc, RUN_URL)
    assert check_message(message) == []
    assert len(message["blocks"]) <= 50
    assert blocks.MORE in all_text(message)
    many = blocks.message("x", [blocks.section(str(i)) for i in range(80)], RUN_URL)
    assert len(many["blocks"]) == 50 and "more on the run page" in all_text(many)
    assert check_message(many) == []


def test_no_report_says_why():
    doc = {"run_id": "r-1", "status": "done",
           "outcome": {"stop": "max_steps", "report": None, "cost_usd": 0.2, "tool_calls": 9}}
    message = blocks.root_report(ALERT, doc, RUN_URL)
    assert check_message(message) == []
    assert "max_steps" in all_text(message) and "no report" in message["text"]


def test_approval_message_carries_the_id_and_the_full_digest():
    record = {"id": "ap-0123456789abcdef", "run_id": "r-1", "kind": "rollout_undo",
              "namespace": "prod", "target": "checkout", "argv_sha256": "ab" * 32,
              "command": "kubectl rollout undo deployment/checkout -n prod",
              "reason": EVIL, "expires_at": "2026-12-07T21:15:00.000Z", "state": "pending"}
    message = blocks.approval(record, operators=["alice", "bob"], run_url=RUN_URL)
    assert check_message(message) == []
    buttons = message["blocks"][1]["elements"]
    assert [b["action_id"] for b in buttons] == ["approve", "deny"]
    assert {b["value"] for b in buttons} == {"ap-0123456789abcdef:" + "ab" * 32}
    text = all_text(message)
    assert "ababababab" in text and "alice, bob" in text and "2026-12-07T21:15" in text
    assert "kubectl rollout undo deployment/checkout -n prod" in text
    assert "<!channel>" not in text
    done = blocks.approval(dict(record, state="executed", decided_by="alice",
                                decided_at="2026-12-07T21:05:00.000Z", exit_code=0,
                                output="deployment.apps/checkout rolled back"),
                           operators=["alice"], run_url=RUN_URL)
    assert check_message(done) == []
    assert "actions" not in [b["type"] for b in done["blocks"]]
    assert "*executed* by alice" in all_text(done) and "rolled back" in all_text(done)
