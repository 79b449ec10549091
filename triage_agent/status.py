"""What the operator sees while a model call runs: one status line, and the model's text as it
streams. Everything goes to stderr; stdout is left to the outcome (one object with --json).

    [step 2/12] preparing a call to get_logs (14 s, ~850 tokens out)

    on a terminal    the line is redrawn in place (CR, erase line) when what the model does
                     changes, as tokens come (at most every REDRAW s) and every `tick` s while
                     nothing comes; it is erased when the call ends
    not a terminal   (CI, a pipe into a log) a plain line at most every `every` s, so a call
                     shorter than that leaves no status line at all
    visible text     written as it arrives, escaped by terminal.printable; the status line
                     waits while a line of text is unfinished. Thinking only with show_thinking

The events come from the streaming client (sse.MessageAssembler.apply's meanings); until the
first one (and without streaming) the line shows the step and the seconds only. Output tokens
are the API's count when it has sent one, else an estimate from the characters streamed so far
(shown with `~`).
`StatusModel` wraps the model seam so the line runs exactly while each call does.
"""

import os
import threading
import time

from triage_agent import terminal

CLEAR = "\r\x1b[K"        # back to column 0, erase to the end of the line
REDRAW = 0.2              # seconds between redraws for token counts alone
CHARS_PER_TOKEN = 4       # for the estimate until the API counts
TOOL_BLOCKS = ("tool_use", "server_tool_use", "mcp_tool_use")


def is_terminal(stream) -> bool:
    """True when `stream` is a terminal that understands redrawing a line in place."""
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError, OSError):
        return False


class StatusLine:
    """The status line and streamed text for one run's model calls (thread-safe)."""

    def __init__(self, stream, *, max_steps, tty, clock=time.monotonic, show_thinking=False,
                 every=5.0, tick=1.0, width=None):
        self.stream, self.max_steps, self.tty = stream, max_steps, tty
        self.clock, self.show_thinking = clock, show_thinking
        self.every, self.tick, self.width = every, tick, width
        self.lock = threading.Lock()
        self.active = self.drawn = self.mid_line = False
        self.step, self.started, self.last, self.doing = 0, 0.0, 0.0, ""
        self.counted, self.chars, self.heard = 0, 0, False
        self._ticker = None

    def begin(self, step, doing="waiting for the model"):
        """A model call starts."""
        with self.lock:
            self.active, self.step, self.started = True, step, self.clock()
            self.last = self.started
            self._reset(doing)
            self._draw(force=self.tty)
            if self.tick and self._ticker is None:
                self._ticker = threading.Thread(target=self._tick, daemon=True)
                self._ticker.start()

    def _reset(self, doing):
        self.doing, self.counted, self.chars, self.heard = doing, 0, 0, False

    def event(self, meaning):
        """One streamed event's meaning (sse.MessageAssembler.apply)."""
        kind, value = meaning[0], meaning[1]
        with self.lock:
            before, self.heard = self.doing, True
            if kind == "tokens":
                self.counted = value
            elif kind == "block":
                self._block(value, meaning[2])
            elif kind in ("text", "thinking", "input"):
                self.chars += len(value)
                if kind == "text" or (kind == "thinking" and self.show_thinking):
                    self._write(value)
            elif kind == "block_stop" and self.mid_line:
                self._write("\n")
            self._draw(force=self.doing != before)

    def _block(self, block_type, name):
        if block_type in ("thinking", "redacted_thinking"):
            self.doing = "thinking"
            if self.show_thinking and block_type == "thinking":
                self._write("(thinking) ")
        elif block_type == "text":
            self.doing = "writing"
        elif block_type in TOOL_BLOCKS:
            tool = terminal.printable(name or "a tool", keep_newlines=False)[:60]
            self.doing = f"preparing a call to {tool}"

    def retry(self, line):
        """The call failed and will be sent again: say so; what streamed so far is void."""
        with self.lock:
            self._say(line)
            self._reset("waiting to retry")
            self._draw(force=self.tty)

    def say(self, line):
        """A whole line for the operator, kept clear of the status line."""
        with self.lock:
            self._say(line)
            self._draw(force=self.tty)

    def _say(self, line):
        self._write(("\n" if self.mid_line else "") + line + "\n", escape=False)

    def end(self):
        """The model call is over: the status line goes away."""
        with self.lock:
            if self.mid_line:
                self._write("\n", escape=False)
            self._clear()
            self.active = False

    def line(self) -> str:
        """The status line as it reads now."""
        seconds = int(max(0.0, self.clock() - self.started))
        head = f"[step {self.step}/{self.max_steps}] {self.doing} ({seconds} s"
        if not self.heard:        # nothing streamed (yet, or --no-stream): no count to show
            return head + ")"
        estimate = self.chars // CHARS_PER_TOKEN
        count = max(self.counted, estimate)
        shown = f"{count:,}" if self.counted >= estimate else f"~{count:,}"
        return f"{head}, {shown} token{'' if count == 1 else 's'} out)"

    def _draw(self, *, force=False):
        if not self.active or self.mid_line:
            return
        now = self.clock()
        if self.tty and (force or now - self.last >= REDRAW):
            text = self.line()[:max(20, self._columns() - 1)]   # a wrapped line cannot be redrawn
            self.stream.write(CLEAR + text)
            self.drawn, self.last = True, now
        elif not self.tty and now - self.last >= self.every:
            self.stream.write(self.line() + "\n")
            self.last = now
        self.stream.flush()

    def _columns(self):
        if self.width:
            return self.width
        try:
            return os.get_terminal_size(self.stream.fileno()).columns or 80  # 0: size unknown
        except (AttributeError, ValueError, OSError):
            return 80

    def _clear(self):
        if self.drawn:
            self.stream.write(CLEAR)
            self.drawn = False
        self.stream.flush()

    def _write(self, text, *, escape=True):
        text = terminal.printable(text) if escape else text
        if not text:
            return
        self._clear()
        self.stream.write(text)
        self.stream.flush()
        self.mid_line = not text.endswith("\n")

    def _tick(self):
        # ends with the call (the next begin() starts another): nothing outlives the run, also
        # when the CLI runs inside a longer-lived process
        while True:
            time.sleep(self.tick)
            with self.lock:
                if not self.active:
                    self._ticker = None
                    return
                self._draw()


class StatusModel:
    """Model seam wrapper: the status line runs while each call does (one call per step)."""

    def __init__(self, model, status):
        self.model, self.status = model, status
        self.calls = 0

    def __call__(self, request):
        # the review after the report (verify/review.py) is not a step: it offers one tool
        review = [t.get("name") for t in request.get("tools") or ()] == ["review_report"]
        self.calls += not review
        self.status.begin(self.calls, "reviewing the report" if review else
                          "waiting for the model")
        try:
            return self.model(request)
        finally:
            self.status.end()
