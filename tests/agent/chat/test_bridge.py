"""The bridge in process: a real approvals Store over a temp outbox (a recording runner instead
of kubectl), the real Poster against the fake Slack. Expired clicks run nothing; a thread is one
per fingerprint and survives a restart; Slack's side never breaks a decision; the options."""

import argparse
import hashlib
import json
import threading

import pytest

from tests.support.fake_slack import BOT, FakeSlack
from triage_agent.chat import slack as slack_mod
from triage_agent.chat.bridge import SlackBridge
from triage_agent.chat.webapi import Poster, WebApi
from triage_agent.serve import approvals, sessions

CHANNEL = "C0TRIAGE1"
ARGV = ["kubectl", "rollout", "undo", "deployment/checkout", "-n", "prod"]
ALERT = {"fingerprint": "fp-1", "labels": {"alertname": "KubePodCrashLooping",
                                           "namespace": "prod"}, "generatorURL": ""}


class Clock:
    def __init__(self):
        self.now = 1_800_000_000.0

    def __call__(self):
        return self.now


class Runner:
    def __init__(self):
        self.calls = []

    def __call__(self, argv):
        self.calls.append(argv)
        return 0, "rolled back", ""


@pytest.fixture
def world(tmp_path):
    fake = FakeSlack().start()
    clock, runner = Clock(), Runner()
    store = approvals.Store(tmp_path, execute=True, runner=runner, clock=clock)
    operators = sessions.Operators({"alice": "0" * 64}, {"U0ALICE01": "alice"})
    poster = Poster(WebApi(fake.api_url, BOT), delay=0.01)

    def bridge():
        made = SlackBridge(poster=poster, channel=CHANNEL, outbox=tmp_path, store=store,
                           operators=operators, base_url="http://triage.example")
        store.changed = made.approval_changed
        return made

    yield fake, store, runner, clock, bridge, poster, tmp_path
    poster.close()
    fake.stop()
    assert fake.invalid == []


def pending(tmp_path, clock, run_id="r-20261207T210000-0123abcd"):
    defer = approvals.handoff(tmp_path / run_id, ttl=60, clock=clock)

    class Proposal:
        kind, namespace, target, reason = "rollout_undo", "prod", "checkout", "bad rollout"
        argv, command, seen = ARGV, " ".join(ARGV), ()
    note = defer(Proposal)
    approval_id = note.split("approval ")[1].split(")")[0]
    doc = {"run_id": run_id, "status": "done", "alert": {"fingerprint": "fp-1"},
           "outcome": {"stop": "report", "report": None}, "approvals": [{"id": approval_id}]}
    return approval_id, doc


def block_actions(approval_id, digest, user="U0ALICE01", action="approve"):
    return {"type": "block_actions", "user": {"id": user}, "channel": {"id": CHANNEL},
            "actions": [{"action_id": action, "block_id": f"approval:{approval_id}",
                         "value": f"{approval_id}:{digest}"}]}


def test_an_expired_approval_clicked_runs_nothing(world):
    fake, store, runner, clock, make, poster, tmp_path = world
    bridge = make()
    bridge.run_started("r-20261207T210000-0123abcd", ALERT)
    approval_id, doc = pending(tmp_path, clock)
    bridge.outcome(doc)
    assert poster.wait_idle(10)
    clock.now += 61
    digest = approvals.argv_sha256(ARGV)
    bridge.handle("interactive", block_actions(approval_id, digest))
    assert poster.wait_idle(10)
    assert runner.calls == []
    assert store.get(approval_id)["state"] == "expired"
    assert any("expired" in e["text"] for e in fake.ephemeral)
    shown = [m for m in fake.messages.values() if "expired" in m["text"]]
    assert shown and not any(b["type"] == "actions" for b in shown[0]["blocks"])


def test_deny_by_button_and_clicks_that_are_not_ours(world):
    fake, store, runner, clock, make, poster, tmp_path = world
    bridge = make()
    bridge.run_started("r-20261207T210000-0123abcd", ALERT)
    approval_id, doc = pending(tmp_path, clock)
    bridge.outcome(doc)
    digest = approvals.argv_sha256(ARGV)
    other = block_actions(approval_id, digest)
    other["actions"][0]["action_id"] = "something_else"
    bridge.handle("interactive", other)
    bridge.handle("interactive", dict(block_actions(approval_id, digest), type="view_submission"))
    bridge.handle("events_api", {"event": {"type": "message"}})
    elsewhere = block_actions(approval_id, digest)
    elsewhere["channel"] = {"id": "C0ELSEWHERE"}
    bridge.handle("interactive", elsewhere)
    assert store.get(approval_id)["state"] == "pending"
    bridge.handle("interactive", block_actions(approval_id, digest, action="deny"))
    assert store.get(approval_id)["state"] == "denied" and runner.calls == []
    assert poster.wait_idle(10)
    assert any("*denied* by alice" in json.dumps(m["blocks"]) for m in fake.messages.values())


def test_one_thread_per_fingerprint_kept_across_a_restart(world):
    fake, store, runner, clock, make, poster, tmp_path = world
    make().run_started("r-20261207T210000-0123abcd", ALERT)
    assert poster.wait_idle(10)
    [root] = fake.messages.values()
    again = make()           # serve restarted: the mapping is read back from the outbox
    again.run_started("r-20261207T220000-0123abcd", ALERT)
    again.resolved("fp-1")
    again.resolved("fp-unknown")     # no thread: nothing posted
    assert poster.wait_idle(10)
    replies = [m for m in fake.messages.values() if m.get("thread_ts") == root["ts"]]
    assert len(fake.messages) == 3 and len(replies) == 2
    assert "r-20261207T220000-0123abcd" in replies[0]["text"]
    assert "resolved" in replies[1]["text"]


def test_a_slack_that_is_down_never_holds_up_a_decision(world, tmp_path):
    fake, store, runner, clock, make, poster, _ = world
    fake.stop()
    dead = Poster(WebApi("http://127.0.0.1:9/api/", BOT, timeout=1), attempts=2, delay=0.01,
                  log=lambda text: None)
    bridge = SlackBridge(poster=dead, channel=CHANNEL, outbox=tmp_path, store=store,
                         operators=None)
    store.changed = slack_mod.also(lambda record: None, bridge.approval_changed)
    bridge.run_started("r-20261207T210000-0123abcd", ALERT)
    approval_id, doc = pending(tmp_path, clock)
    bridge.outcome(doc)
    record = store.decide(approval_id, decision="approve", digest=approvals.argv_sha256(ARGV),
                          operator="alice")
    assert record["state"] == "executed" and len(runner.calls) == 1
    assert dead.wait_idle(20) and dead.failures >= 2
    dead.close()
    fake.start()    # the fixture stops it again


def options(**given):
    base = {"slack_channel": None, "slack_bot_token_file": None, "slack_app_token_file": None,
            "slack_api_url": slack_mod.DEFAULT_API_URL}
    return argparse.Namespace(**{**base, **given})


@pytest.mark.parametrize("given, environ, words", [
    ({"slack_bot_token_file": "x"}, {}, "need --slack-channel"),
    ({"slack_channel": "#incidents"}, {}, "give the channel's id"),
    ({"slack_channel": "C0TRIAGE1"}, {}, "needs SLACK_BOT_TOKEN"),
    ({"slack_channel": "C0TRIAGE1"}, {"SLACK_BOT_TOKEN": "xoxb-1"}, "needs SLACK_APP_TOKEN"),
    ({"slack_channel": "C0TRIAGE1"}, {"SLACK_BOT_TOKEN": "xapp-1", "SLACK_APP_TOKEN": "xapp-2"},
     "SLACK_BOT_TOKEN: not a xoxb- token"),
    ({"slack_channel": "C0TRIAGE1", "slack_api_url": "ftp://x"}, {}, "give an http(s) URL"),
])
def test_slack_options_that_cannot_work(given, environ, words):
    with pytest.raises(slack_mod.SlackConfigError) as err:
        slack_mod.load(options(**given), environ)
    assert words in str(err.value)
    for value in environ.values():
        assert value not in str(err.value)


def test_tokens_from_files_win_and_never_reach_a_run(tmp_path):
    (tmp_path / "bot").write_text("xoxb-from-file\n")
    config = slack_mod.load(options(slack_channel="C0TRIAGE1",
                                    slack_bot_token_file=str(tmp_path / "bot")),
                            {"SLACK_BOT_TOKEN": "xoxb-env", "SLACK_APP_TOKEN": "xapp-env"})
    assert (config.bot_token, config.app_token) == ("xoxb-from-file", "xapp-env")
    assert "xoxb" not in repr(config) and "xapp" not in repr(config)
    env = slack_mod.child_env({"SLACK_BOT_TOKEN": "b", "SLACK_APP_TOKEN": "a", "PATH": "/bin"})
    assert env == {"PATH": "/bin"}


def test_the_manifest_in_docs_asks_for_what_serve_uses():
    import re
    import textwrap
    from pathlib import Path

    import yaml
    text = (Path(__file__).resolve().parents[3] / "docs" / "slack.md").read_text()
    manifest = yaml.safe_load(textwrap.dedent(re.search(r"```yaml\n(.*?)```", text, re.S)[1]))
    assert sorted(manifest["oauth_config"]["scopes"]["bot"]) == [
        "app_mentions:read", "channels:history", "chat:write"]
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is True
    assert settings["interactivity"]["is_enabled"] is True
    assert "request_url" not in settings["interactivity"]   # Socket Mode: no inbound route
    for flag in ("--slack-channel", "--slack-bot-token-file", "--slack-app-token-file",
                 "--slack-api-url", "triage_slack_failures_total", "connections:write"):
        assert flag in text


class Questions:
    """A stand-in for serve's follow-ups (followups.Questions' ask): one at a time per run."""

    class Refused(Exception):
        def __init__(self, status, message):
            super().__init__(message)
            self.status = status

    def __init__(self):
        self.asked = []

    def ask(self, run_id, question, operator):
        if any(r["run_id"] == run_id and r["state"] == "queued" for r in self.asked):
            raise self.Refused(409, "follow-up q-1 of this run is still queued or running")
        record = {"id": f"q-{len(self.asked) + 1}", "run_id": run_id, "question": question,
                  "asked_by": operator, "state": "queued"}
        self.asked.append(record)
        return record


def mention(ts, user="U0ALICE01", text="<@U0BOT> why did it start now? <!channel>"):
    return {"event_id": f"Ev-{user}-{text}", "event": {
        "type": "app_mention", "user": user, "channel": CHANNEL, "thread_ts": ts, "text": text,
        "ts": "1765000999.000001"}}


def test_a_mention_in_the_thread_is_a_follow_up_and_its_answer_posts_there(world):
    fake, store, runner, clock, make, poster, tmp_path = world
    questions = Questions()
    bridge = make()
    bridge.questions = questions
    run_id = "r-20261207T210000-0123abcd"
    bridge.run_started(run_id, ALERT)
    assert poster.wait_idle(10)
    [root] = fake.messages.values()
    bridge.handle("events_api", mention(root["ts"]))        # the run has not ended yet
    assert poster.wait_idle(10) and "has not ended" in fake.ephemeral[-1]["text"]
    bridge.outcome({"run_id": run_id, "status": "done", "alert": {"fingerprint": "fp-1"},
                    "outcome": {"stop": "report", "report": None}})
    bridge.handle("events_api", mention(root["ts"], user="U0MALLORY"))
    bridge.handle("events_api", mention("1765000000.424242"))   # not one of our threads
    bridge.handle("events_api", mention(root["ts"]))
    bridge.handle("events_api", mention(root["ts"], text="<@U0BOT> and again"))
    assert poster.wait_idle(10)
    assert [q["question"] for q in questions.asked] == ["why did it start now? <!channel>"]
    assert questions.asked[0]["asked_by"] == "alice" and questions.asked[0]["run_id"] == run_id
    notes = [e["text"] for e in fake.ephemeral]
    assert any("not an operator" in n for n in notes) and any("still queued" in n for n in notes)
    bridge.question_done(dict(questions.asked[0], state="answered",
                              answer="the image changed at 20:58 <!here>",
                              evidence=[{"quote": "Back-off restarting", "interpretation": "x"}]))
    assert poster.wait_idle(10)
    replies = [m for m in fake.messages.values() if m.get("thread_ts") == root["ts"]]
    text = json.dumps([r["blocks"] for r in replies])
    assert "queued" in replies[0]["text"] and "the image changed at 20:58" in text
    assert "<!here>" not in text and "<!channel>" not in text and "Back-off restarting" in text


def test_the_watch_verdict_updates_the_approval_message(world):
    fake, store, runner, clock, make, poster, tmp_path = world
    bridge = make()
    bridge.run_started("r-20261207T210000-0123abcd", ALERT)
    approval_id, doc = pending(tmp_path, clock)
    bridge.outcome(doc)
    store.decide(approval_id, decision="approve", digest=approvals.argv_sha256(ARGV),
                 operator="alice")
    assert poster.wait_idle(10)
    # what the watch after an executed action leaves in the record, then the store's change
    path = next(tmp_path.glob(f"*.approval.{approval_id}.json"))
    record = json.loads(path.read_text())
    record["verification"] = {"state": "recovered", "observed": ["checkout 3/3 Ready"]}
    path.write_text(json.dumps(record))
    bridge.approval_changed(record)
    assert poster.wait_idle(10)
    shown = [m for m in fake.messages.values() if "Watched" in json.dumps(m["blocks"])]
    assert shown and "recovered" in json.dumps(shown[0]["blocks"])


def test_the_thread_mapping_stays_bounded(world, monkeypatch):
    from triage_agent.chat import bridge as bridge_mod
    fake, store, runner, clock, make, poster, tmp_path = world
    monkeypatch.setattr(bridge_mod, "KEPT_THREADS", 2)
    bridge = make()
    for n in range(3):
        bridge.run_started(f"r-20261207T21000{n}-0123abcd", dict(ALERT, fingerprint=f"fp-{n}"))
    assert poster.wait_idle(10)
    kept = json.loads((tmp_path / "slack-threads.json").read_text())["threads"]
    assert list(kept) == ["fp-1", "fp-2"] and len(fake.messages) == 3


def test_serve_refuses_slack_options_that_cannot_work(tmp_path, monkeypatch):
    from tests.agent.cli.test_cli import REPLAY
    from triage_agent.serve import service
    for name in slack_mod.TOKEN_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(service.ServeUsageError, match="needs SLACK_BOT_TOKEN"):
        service.parse(["--namespaces", "prod", "--replay", str(REPLAY / "crashloop.json"),
                       "--slack-channel", "C0TRIAGE1"])
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-1")
    args, _ = service.parse(["--namespaces", "prod", "--replay", str(REPLAY / "crashloop.json"),
                             "--slack-channel", "C0TRIAGE1"])
    assert args.slack.channel == "C0TRIAGE1" and args.slack.api_url == "https://slack.com/api/"
