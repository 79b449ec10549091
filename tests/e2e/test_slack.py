"""Slack end to end: the real serve (a subprocess) with --slack-channel against the fake Slack
(Web API on a local HTTP server, Socket Mode over the `websockets` server), the real CLI child,
the replayed model proposing `rollout_undo deployment/checkout`, real kubectl and kube_sim.

An alert -> a thread whose root becomes the report -> an approval message with buttons -> an
Approve click envelope from a mapped operator -> exactly one write on the simulated cluster ->
the message updated with who decided and the result. Unmapped, forged, digest-mismatched and
repeated clicks change nothing; Slack answering 429 and 500, and the WebSocket dropping
mid-envelope, lose nothing; Alertmanager's
resolved notification lands in the thread; the thread survives a restart of serve."""

import copy
import hashlib
import json
import re

import pytest

from tests.e2e.test_approvals import TOKENS, WEBHOOK, api, until, wait_for_outcome, writes
from tests.agent.cli.test_cli import REPLAY
from tests.agent.serve.test_serve import PAYLOAD, ServeProcess, get, post
from tests.support.fake_slack import APP, BOT, FakeSlack

CHANNEL = "C0TRIAGE1"
ALICE, MALLORY = "U0ALICE01", "U0MALLORY"


@pytest.fixture
def slack():
    fake = FakeSlack().start()
    yield fake
    fake.stop()
    assert fake.invalid == []


def start_serve(sim, tmp_path, slack, *extra):
    (tmp_path / "webhook").write_text(WEBHOOK)
    (tmp_path / "bot").write_text(BOT + "\n")
    (tmp_path / "app").write_text(APP + "\n")
    (tmp_path / "operators").write_text(
        f"alice {hashlib.sha256(TOKENS['alice'].encode()).hexdigest()} slack:{ALICE}\n"
        f"bob {hashlib.sha256(TOKENS['bob'].encode()).hexdigest()}\n")
    service = ServeProcess(
        "--namespaces", "prod", "--workers", "1", "--outbox", str(tmp_path / "outbox"),
        "--replay", str(REPLAY / "crashloop-undo.json"), "--kubeconfig", sim.kubeconfig,
        "--allow-action", "rollout_undo", "--operators", str(tmp_path / "operators"),
        "--token-file", str(tmp_path / "webhook"), "--execute",
        "--slack-channel", CHANNEL, "--slack-api-url", slack.api_url,
        "--slack-bot-token-file", str(tmp_path / "bot"),
        "--slack-app-token-file", str(tmp_path / "app"), *extra)
    return service


def alert_in(service):
    status, _, body = post(service.url, PAYLOAD, headers={"Authorization": f"Bearer {WEBHOOK}"})
    assert status == 202, body
    return body["queued"][0]["run_id"]


def approval_message(slack):
    found = [m for m in slack.messages.values()
             if any(b["type"] == "actions" for b in m.get("blocks") or ())]
    return found[0] if found else None


def click_payload(message, user, *, action="approve", value=None, block_id=None):
    actions = next(b for b in message["blocks"] if b["type"] == "actions")
    button = next(e for e in actions["elements"] if e["action_id"] == action)
    return {"type": "block_actions", "user": {"id": user}, "channel": {"id": CHANNEL},
            "message": {"ts": message["ts"]},
            "actions": [{"action_id": action, "block_id": block_id or actions["block_id"],
                         "value": value or button["value"], "type": "button"}]}


def click(slack, message, user, *, env_id=None, opens=1, **kwargs):
    envelope_id = slack.envelope("interactive", click_payload(message, user, **kwargs),
                                 envelope_id=env_id, opens=opens)
    slack.wait_ack(envelope_id)
    return envelope_id


def slack_flags(tmp_path, slack):
    (tmp_path / "bot").write_text(BOT + "\n")
    (tmp_path / "app").write_text(APP + "\n")
    (tmp_path / "slack-operators").write_text(
        f"alice {hashlib.sha256(TOKENS['alice'].encode()).hexdigest()} slack:{ALICE}\n")
    return ("--operators", str(tmp_path / "slack-operators"), "--slack-channel", CHANNEL,
            "--slack-api-url", slack.api_url, "--slack-bot-token-file", str(tmp_path / "bot"),
            "--slack-app-token-file", str(tmp_path / "app"))


def test_a_mention_in_the_thread_is_a_follow_up_answered_there(kube_sim, tmp_path, slack):
    from tests.e2e.test_followups import QUESTION, script, serve_a_run
    served = serve_a_run(kube_sim("crashloop"), tmp_path, script(), *slack_flags(tmp_path, slack))
    service, fake, outbox, run_id = next(served)
    try:
        slack.wait(lambda: any(not m.get("thread_ts") and "checkout" in m["text"]
                               and "Triaging" not in m["text"] for m in slack.messages.values()))
        root = next(m for m in slack.messages.values() if not m.get("thread_ts"))
        event = {"type": "app_mention", "user": ALICE, "channel": CHANNEL,
                 "thread_ts": root["ts"], "ts": "1765000999.000001",
                 "text": f"<@U0TRIAGEBOT> {QUESTION}"}
        slack.wait_ack(slack.envelope("events_api", {"event_id": "Ev0MENTION1",
                                                     "event": event}))
        slack.wait_ack(slack.envelope("events_api", {"event_id": "Ev0MENTION2", "event": dict(
            event, user=MALLORY)}))
        slack.wait(lambda: any("not an operator" in e["text"] for e in slack.ephemeral))
        slack.wait(lambda: any("checkout-6f8d9c7b5d-m4q9z" in json.dumps(m["blocks"])
                               and m.get("thread_ts") == root["ts"]
                               for m in slack.messages.values()), timeout=60)
        asked = api(service.url, f"/api/runs/{run_id}/questions")[1]["questions"]
        assert [(q["question"], q["asked_by"], q["state"]) for q in asked] == [
            (QUESTION, "alice", "answered")]
    finally:
        next(served, None)


def test_alert_thread_report_and_one_click_is_one_write(kube_sim, tmp_path, slack):
    sim = kube_sim("crashloop")
    slack.fail("chat.postMessage", 429, retry_after=0)       # the root: rate limited once
    slack.fail("chat.update", 500)                           # the report: a 500 once
    service = start_serve(sim, tmp_path, slack)
    try:
        run_id = alert_in(service)
        outcome = wait_for_outcome(tmp_path / "outbox", run_id)
        slack.wait(lambda: approval_message(slack) is not None)
        root = next(m for m in slack.messages.values() if not m.get("thread_ts"))
        assert root["channel"] == CHANNEL
        first_two = slack.posted("chat.postMessage")[:2]      # the 429, then its retry
        assert first_two[0] == first_two[1] and not first_two[0].get("thread_ts")
        assert first_two[0]["text"] == "Triaging KubePodCrashLooping prod/checkout…"
        assert "pod=checkout-6f8d9c7b5d-x7k2p" in json.dumps(first_two[0]["blocks"])
        summary = outcome["outcome"]["report"]["summary"]
        slack.wait(lambda: summary[:30] in json.dumps(slack.messages[root["ts"]]["blocks"],
                                                      ensure_ascii=False))
        message = approval_message(slack)
        assert message["thread_ts"] == root["ts"]
        digest = outcome["approvals"][0]["argv_sha256"]
        assert digest[:12] in json.dumps(message["blocks"])
        assert f"{outcome['approvals'][0]['id']}:{digest}" in json.dumps(message["blocks"])

        # refusals: unmapped user, forged value, digest mismatch, wrong block: nothing changes
        click(slack, message, MALLORY)
        slack.wait(lambda: any("not an operator" in e["text"] for e in slack.ephemeral))
        approval_id = outcome["approvals"][0]["id"]
        click(slack, message, ALICE, value=f"{approval_id}:{'0' * 64}")
        slack.wait(lambda: any("does not match" in e["text"] for e in slack.ephemeral))
        click(slack, message, ALICE, value=f"ap-{'1' * 16}:{digest}",
              block_id=f"approval:ap-{'1' * 16}")
        slack.wait(lambda: any("no such approval" in e["text"] for e in slack.ephemeral))
        assert writes(sim) == []
        assert api(service.url, f"/api/approvals/{approval_id}")[1]["state"] == "pending"

        # the Approve click: the link drops half-way through its envelope (no ack, so Slack
        # delivers it again on the new connection), then Slack delivers it twice: one write
        slack.drop_mid_envelope("interactive", click_payload(message, ALICE), "env-approve")
        assert writes(sim) == []
        first = click(slack, message, ALICE, env_id="env-approve", opens=2)
        click(slack, message, ALICE, env_id=first, opens=2)
        assert until(lambda: api(service.url, f"/api/approvals/{approval_id}")[1]["state"]
                     == "executed")
        slack.wait(lambda: "*executed* by alice" in json.dumps(
            slack.messages[message["ts"]]["blocks"]))
        click(slack, message, ALICE, opens=2)    # a later click on the stale buttons
        slack.wait(lambda: any("already decided" in e["text"] for e in slack.ephemeral))
        assert len(writes(sim)) == 1
        # decided on the page too: refused, nothing more runs
        status, _ = api(service.url, f"/api/approvals/{approval_id}", token=TOKENS["bob"],
                        body={"decision": "approve", "argv_sha256": digest})
        assert status == 409 and len(writes(sim)) == 1

        # resolved: a note in the thread
        resolved = copy.deepcopy(PAYLOAD)
        resolved["status"] = resolved["alerts"][0]["status"] = "resolved"
        post(service.url, resolved, headers={"Authorization": f"Bearer {WEBHOOK}"})
        slack.wait(lambda: any("resolved" in m["text"] and m.get("thread_ts") == root["ts"]
                               for m in slack.messages.values()))
        _, metrics = get(service.url, "/metrics")
        failures = int(re.search(r"^triage_slack_failures_total (\d+)$", metrics, re.M)[1])
        assert failures == 2        # the 429 and the 500, each retried and then delivered
    finally:
        assert service.stop() == 0
    logged = "".join(service.lines)
    assert BOT not in logged and APP not in logged
    for path in (tmp_path / "outbox").iterdir():
        text = path.read_text(errors="replace")
        assert BOT not in text and APP not in text, path
