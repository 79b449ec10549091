"""Socket Mode and the Web API queue against the fake Slack: every envelope acknowledged by its
id before any work, handled once however often Slack delivers it, reconnects on `disconnect`
and on a dropped link; 429 and 500 retried, nothing lost or doubled; tokens never shown."""

import json
import threading

import pytest

from tests.support.fake_slack import APP, BOT, FakeSlack
from triage_agent.chat.socketmode import SocketMode
from triage_agent.chat.webapi import Poster, SlackApiError, WebApi


@pytest.fixture
def slack():
    fake = FakeSlack().start()
    yield fake
    fake.stop()
    assert fake.invalid == []


class Recorder:
    def __init__(self, gate=None):
        self.seen, self.gate = [], gate
        self.cond = threading.Condition()

    def __call__(self, kind, payload):
        if self.gate is not None:
            self.gate.wait(10)
        with self.cond:
            self.seen.append((kind, payload))
            self.cond.notify_all()

    def wait(self, n):
        with self.cond:
            assert self.cond.wait_for(lambda: len(self.seen) >= n, 10), self.seen


@pytest.fixture
def socket_mode(slack):
    logs = []
    started = []

    def start(handler, **kwargs):
        client = SocketMode(WebApi(slack.api_url, APP), handler, delay=0.01, max_delay=0.05,
                            log=logs.append, **kwargs).start()
        started.append(client)
        return client

    start.logs = logs
    yield start
    for client in started:
        client.stop()


def test_envelopes_are_acked_then_handled_once(slack, socket_mode):
    gate = threading.Event()
    handled = Recorder(gate)
    socket_mode(handled)
    event = {"event_id": "Ev1", "event": {"type": "app_mention", "text": "hi"}}
    first = slack.envelope("events_api", event)
    slack.wait_ack(first)            # acknowledged while the handler is still blocked
    assert handled.seen == []
    slack.envelope("events_api", event, envelope_id=first)       # the same envelope again
    retry = slack.envelope("events_api", dict(event))            # Slack's retry of the event
    click = slack.envelope("interactive", {"type": "block_actions"}, fragments=4)
    slack.wait_ack(first, 2)
    slack.wait_ack(retry)
    slack.wait_ack(click)
    gate.set()
    handled.wait(2)
    assert sorted(kind for kind, _ in handled.seen) == ["events_api", "interactive"]


def test_disconnect_and_a_dropped_link_reconnect_and_lose_nothing(slack, socket_mode):
    handled = Recorder()
    client = socket_mode(handled)
    slack.connection(1).ping(b"slack-ping")
    slack.disconnect()
    sent = slack.envelope("interactive", {"type": "block_actions", "n": 1}, opens=2)
    slack.wait_ack(sent)
    # the link dies half-way through an envelope: Slack has no ack, so it delivers it again
    slack.drop_mid_envelope("interactive", {"type": "block_actions", "n": 2}, "env-dropped",
                            opens=2)
    again = slack.envelope("interactive", {"type": "block_actions", "n": 2},
                           envelope_id="env-dropped", opens=3)
    slack.wait_ack(again)
    handled.wait(2)
    assert [p["n"] for _, p in handled.seen] == [1, 2]
    assert client.connections == 3 and slack.opens == 3
    assert any("connection lost" in line for line in socket_mode.logs)


def test_a_failing_connections_open_is_retried_with_backoff(slack, socket_mode):
    slack.fail("apps.connections.open", 500)
    slack.fail("apps.connections.open", 200, error="internal_error")
    handled = Recorder()
    socket_mode(handled)
    sent = slack.envelope("events_api", {"event_id": "Ev9"})
    slack.wait_ack(sent)
    assert slack.opens == 1 and len(slack.posted("apps.connections.open")) == 3
    assert all(APP not in line for line in socket_mode.logs)


def test_poster_honours_429_retry_after_and_retries_500(slack):
    logs = []
    poster = Poster(WebApi(slack.api_url, BOT), delay=0.01, log=logs.append)
    slack.fail("chat.postMessage", 429, retry_after=0)
    slack.fail("chat.postMessage", 500)
    answers = []
    poster.submit("chat.postMessage", {"channel": "C1", "text": "one"}, then=answers.append)
    poster.submit("chat.postMessage", lambda: {"channel": "C1", "text": "two",
                                               "thread_ts": answers[0]["ts"]})
    assert poster.wait_idle(10)
    texts = [m["text"] for m in slack.messages.values()]
    assert texts == ["one", "two"]                  # each once, in order, the reply threaded
    assert poster.failures == 2 and poster.dropped == 0
    poster.close()


def test_poster_gives_up_on_errors_that_cannot_pass_and_bounds_its_queue(slack):
    logs = []
    poster = Poster(WebApi(slack.api_url, BOT), size=1, attempts=3, delay=0.01,
                    log=logs.append)
    slack.fail("chat.postMessage", 200, error="channel_not_found")
    taken, release = threading.Event(), threading.Event()
    poster.submit("chat.postMessage", lambda: taken.set() or release.wait(10) and {
        "channel": "C1", "text": "x"})
    assert taken.wait(10)     # the poster's thread holds the first call; the queue is empty
    assert poster.submit("chat.postMessage", {"channel": "C1", "text": "y"})  # waits in line
    assert not poster.submit("chat.postMessage", {"channel": "C1", "text": "z"})  # full
    release.set()
    assert poster.wait_idle(10)
    assert [m["text"] for m in slack.messages.values()] == ["y"]
    assert poster.dropped == 2 and poster.failures == 2
    assert any("channel_not_found" in line for line in logs)
    assert all(BOT not in line for line in logs)
    poster.close()


def test_the_token_shows_in_no_error_or_repr(slack):
    api = WebApi(slack.api_url, BOT)
    assert BOT not in repr(api)
    with pytest.raises(SlackApiError) as err:
        WebApi(slack.api_url, "xoxb-wrong").call("chat.postMessage", {"channel": "C1",
                                                                        "text": "t"})
    assert err.value.error == "invalid_auth" and not err.value.retryable
    assert "xoxb-wrong" not in str(err.value)
    dead = WebApi("http://127.0.0.1:9/api/", BOT, timeout=2)
    with pytest.raises(SlackApiError) as err:
        dead.call("chat.postMessage", {})
    assert err.value.retryable and BOT not in str(err.value)
    assert json.dumps(slack.posted()).count(BOT) == 0   # in the header only, never the body
