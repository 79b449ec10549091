"""The live status line (status.py) on a real pty and a real pipe, driven by a fake clock, and
the StatusModel wrapper around the model seam."""

import os
import pty
import select

import pytest

from triage_agent.status import CLEAR, StatusLine, StatusModel, is_terminal


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def drain(fd):
    """Everything readable on `fd` now (the writes were flushed before this is called)."""
    out = b""
    while select.select([fd], [], [], 0)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:       # EIO: the other end of the pty is closed
            break
        if not chunk:
            break
        out += chunk
    return out.decode("utf-8", "replace")


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setenv("TERM", "xterm")
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w", encoding="utf-8")
    yield stream, master
    stream.close()
    os.close(master)


@pytest.fixture
def pipe():
    read, write = os.pipe()
    stream = os.fdopen(write, "w", encoding="utf-8")
    yield stream, read
    stream.close()
    os.close(read)


def a_call(line, clock):
    """One model call's events: thinking, text, a tool call; the clock moves between them."""
    line.begin(2)
    line.event(("tokens", 1))
    clock.now += 3
    line.event(("block", "thinking", None))
    line.event(("thinking", "secret plan " * 40))
    line.event(("block_stop", "thinking"))
    clock.now += 4
    line.event(("block", "text", None))
    line.event(("text", "Looking at \x1b[31mpods\n"))
    line.event(("text", "and logs"))
    line.event(("block_stop", "text"))
    clock.now += 5
    line.event(("block", "tool_use", "get_logs"))
    line.event(("input", '{"namespace": "prod"}'))
    line.event(("block_stop", "tool_use"))
    line.event(("tokens", 345))
    line.end()


def test_on_a_terminal_the_line_is_redrawn_in_place_and_erased_at_the_end(terminal):
    stream, master = terminal
    clock = Clock()
    assert is_terminal(stream)
    line = StatusLine(stream, max_steps=12, tty=is_terminal(stream), clock=clock, tick=None)
    a_call(line, clock)
    out = drain(master)
    assert CLEAR + "[step 2/12] waiting for the model (0 s)" + CLEAR in out
    assert CLEAR + "[step 2/12] thinking (3 s, 1 token out)" in out
    assert CLEAR + "[step 2/12] preparing a call to get_logs (12 s, ~" in out
    assert "Looking at \\x1b[31mpods\r\nand logs\r\n" in out   # escaped; the pty adds the CRs
    assert "secret plan" not in out and "\x1b[31m" not in out
    assert out.endswith(CLEAR) and "\n[step" not in out    # never a status line on its own


def test_a_terminal_line_never_wraps(terminal):
    stream, master = terminal
    line = StatusLine(stream, max_steps=12, tty=True, clock=Clock(), tick=None, width=30)
    line.begin(1)
    line.event(("block", "tool_use", "a_tool_with_a_name_far_too_long_for_the_line"))
    line.end()
    drawn = [part for part in drain(master).split(CLEAR) if part]
    assert drawn and all(len(part) <= 29 for part in drawn)


def test_thinking_streams_only_when_asked(terminal):
    stream, master = terminal
    clock = Clock()
    a_call(StatusLine(stream, max_steps=12, tty=True, clock=clock, tick=None,
                      show_thinking=True), clock)
    assert "(thinking) secret plan secret plan" in drain(master)


def test_on_a_pipe_a_plain_line_at_most_every_few_seconds(pipe):
    stream, read = pipe
    clock = Clock()
    assert not is_terminal(stream)
    line = StatusLine(stream, max_steps=12, tty=is_terminal(stream), clock=clock, tick=None,
                      every=5.0)
    line.begin(1)
    for step in (1, 2, 2.5, 1, 0.2, 4.8):    # at 101, 103, 105.5, 106.5, 106.7, 111.5
        clock.now += step
        line.event(("thinking", "x" * 400))
    line.end()
    line.begin(2)                            # a short call leaves no status line at all
    line.event(("text", "done.\n"))
    line.end()
    out = os.read(read, 65536).decode()
    assert out.splitlines() == ["[step 1/12] waiting for the model (5 s, ~300 tokens out)",
                                "[step 1/12] waiting for the model (11 s, ~600 tokens out)",
                                "done."]
    assert "\r" not in out and "\x1b" not in out


def test_a_retry_ends_the_text_line_and_starts_the_count_again(pipe):
    stream, read = pipe
    clock = Clock()
    line = StatusLine(stream, max_steps=3, tty=False, clock=clock, tick=None, every=1.0)
    line.begin(1)
    line.event(("block", "text", None))
    line.event(("text", "half a sen"))
    line.retry("[retry 1] overloaded_error; trying again in 0.5 s")
    clock.now += 2
    line.event(("tokens", 1))
    line.end()
    assert os.read(read, 65536).decode().splitlines() == [
        "half a sen", "[retry 1] overloaded_error; trying again in 0.5 s",
        "[step 1/3] waiting to retry (2 s, 1 token out)"]


def test_status_model_runs_the_line_exactly_while_each_call_does(pipe):
    stream, read = pipe
    seen = []

    class Line:
        def begin(self, step, doing):
            seen.append(("begin", step) if doing == "waiting for the model" else (doing, step))

        def end(self):
            seen.append(("end",))

    def model(request):
        seen.append(("call", request["n"]))
        if request["n"] == 2:
            raise KeyboardInterrupt
        return {"n": request["n"]}

    wrapped = StatusModel(model, Line())
    assert wrapped({"n": 1}) == {"n": 1}
    with pytest.raises(KeyboardInterrupt):
        wrapped({"n": 2})
    assert seen == [("begin", 1), ("call", 1), ("end",), ("begin", 2), ("call", 2), ("end",)]
    seen.clear()   # the review after the report is not a step: it keeps the last step's number
    assert wrapped({"n": 3, "tools": [{"name": "review_report"}]})["n"] == 3
    assert seen == [("reviewing the report", 2), ("call", 3), ("end",)]


def test_a_gone_stderr_or_a_dumb_terminal_is_not_a_terminal(monkeypatch, terminal):
    stream, _ = terminal
    monkeypatch.setenv("TERM", "dumb")
    assert not is_terminal(stream)
    assert not is_terminal(None)


def test_the_ticker_shows_a_silent_call_and_no_count_without_streaming(pipe):
    stream, read = pipe
    clock = Clock()
    line = StatusLine(stream, max_steps=3, tty=False, clock=clock, tick=0.01, every=5.0)
    line.begin(1)
    clock.now += 7           # nothing arrives (--no-stream, or a model thinking in silence)
    first = os.read(read, 65536).decode()   # the ticker's line: waits for it, no sleep here
    line.end()
    assert first == "[step 1/3] waiting for the model (7 s)\n"
