"""Streaming benchmark for `make bench` (not a test: prints medians and ratios, asserts nothing).

What streaming costs the client per response, against the same response not streamed:
- end to end over HTTP from the same fake API (tests/support/fake_messages_api.py), streamed and plain
  calls interleaved in pairs; the stream is encoded once and written one event per chunk;
- the client's own work alone: sse.read_message over the bytes the server sent (one read per
  event, as the API's events arrive), against json.loads of the plain body, also in pairs.
Each figure is the median over PAIRS pairs of the mean of BATCH calls; the ratio is streamed
over plain. Two answers: a typical turn and a long report.
"""

import json
import statistics
import time

from tests.support.fake_messages_api import FakeMessagesApi, response, text, tool_use
from tests.support.fake_sse import encode, events_for
from triage_agent.model import sse
from triage_agent.model.messages import MessagesClient

PAIRS = 7
BATCH = 20
REQUEST = {"model": "claude-opus-5-5", "max_tokens": 16000,
           "messages": [{"role": "user", "content": [{"type": "text", "text": "pods restart"}]}]}


def answers():
    """(name, response body): a typical tool turn and a long write_report turn."""
    thinking = {"type": "thinking", "thinking": "The pods crash-loop; the logs say why. " * 40,
                "signature": "Eq" + "x" * 400}
    typical = response("tool_use", thinking, text("Reading the previous logs. " * 15),
                       tool_use("toolu_1", "get_logs", {"namespace": "prod", "name": "checkout",
                                                        "previous": True}))
    report = {"summary": "checkout crashes at start-up " * 10, "evidence": [
        {"tool_use_id": f"toolu_{i}", "quote": "FATAL: PAYMENT_API_URL is not set " * 3,
         "interpretation": "the app exits at once " * 5} for i in range(20)]}
    long = response("tool_use", thinking, tool_use("toolu_9", "write_report", report))
    return [("typical turn", typical), ("long report", long)]


class Events:
    """A response body that hands out one event per read1, like a socket as events arrive."""

    def __init__(self, pieces):
        self.pieces, self.at = pieces, 0

    def read1(self, size):
        self.at += 1
        return self.pieces[self.at - 1] if self.at <= len(self.pieces) else b""


def timed(call):
    began = time.perf_counter()
    for _ in range(BATCH):
        call()
    return (time.perf_counter() - began) / BATCH


def paired(streamed, plain):
    """Medians of (streamed, plain) seconds per call over interleaved pairs."""
    a, b = [], []
    for i in range(PAIRS):
        first, second = (streamed, plain) if i % 2 == 0 else (plain, streamed)
        x, y = timed(first), timed(second)
        a.append(x if first is streamed else y)
        b.append(y if first is streamed else x)
    return statistics.median(a), statistics.median(b)


def over_http(body):
    events = events_for(body)
    raw = b"".join(encode([event]) for event in events)   # encoded once: time the client
    script = [body] * (PAIRS * BATCH * 2)
    with FakeMessagesApi(script, sse={"split": [len(encode([e])) for e in events], "raw": raw,
                                      "events": []}) as api:
        streamed = MessagesClient(api_key="k", base_url=api.url, stream=True)
        plain = MessagesClient(api_key="k", base_url=api.url)
        return paired(lambda: streamed(REQUEST), lambda: plain(REQUEST))


def client_only(body):
    events = events_for(body)
    pieces = [encode([event]) for event in events]
    raw = json.dumps(body).encode()
    return paired(lambda: sse.read_message(Events(pieces)), lambda: json.loads(raw)), \
        len(events), sum(map(len, pieces)), len(raw)


def main():
    """Print the streaming figures."""
    print(f"medians over {PAIRS} interleaved pairs of {BATCH}-call means")
    for name, body in answers():
        (s_http, p_http) = over_http(body)
        (s_own, p_own), count, sse_bytes, plain_bytes = client_only(body)
        print(f"{name}: {count} events, {sse_bytes:,} bytes streamed vs {plain_bytes:,} plain")
        print(f"  over HTTP, same fake API:   streamed {s_http * 1000:.2f} ms, plain "
              f"{p_http * 1000:.2f} ms per call (ratio {s_http / p_http:.2f})")
        print(f"  client's own decoding:      streamed {s_own * 1000:.3f} ms, plain "
              f"{p_own * 1000:.3f} ms per answer (ratio {s_own / p_own:.0f}; "
              f"+{(s_own - p_own) * 1000:.2f} ms, {s_own / count * 1e6:.1f} us per event)")


if __name__ == "__main__":
    main()
