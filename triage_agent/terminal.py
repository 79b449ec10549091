"""The process's edges: the signals that end a run the way ^C does, and standard streams that
may be gone.

    SIGINT (^C), SIGTERM (`kill`, a CI timeout), SIGHUP (the operator's terminal went away)
      first one, while armed -> KeyboardInterrupt in the main thread: the loop turns it into
                                the outcome "interrupted"; the CLI closes the MCP server, prints
                                the outcome and exits 128 + the signal number (130, 143, 129)
      any later one          -> ignored: the wind-down (closing the MCP server, writing the
                                outcome) is bounded and must not be cut short half-way
      after disarm()         -> ignored: the run is over and its outcome is being written

A signal the process was started with ignored (`nohup`, a background job's SIGINT) stays ignored.
One that arrives while the main thread is inside the import system or a finalizer (`__del__`) is
raised a moment later instead (RETRY_S): there an exception is lost or mangled (Python prints
and drops one raised in the import lock's weakref callback or a finalizer, and 3.11 wraps one
raised in `__set_name__` in a RuntimeError), and the start-up's lazy imports are such a place.

Streams: people's lines go to stderr through `QuietStream`, which drops what it cannot write (a
closed or full stderr, a reader that went away), so no progress or audit line ends a run.
`print_stdout` prints the outcome; a reader that went away (`triage-agent ... | head -1`) ends
the output quietly, like a well-behaved Unix tool, and the exit code stays the outcome's.

Text: `printable` escapes control and format characters (terminal escapes, carriage returns,
bidi overrides) in anything model- or cluster-supplied before it reaches a person's terminal;
`shorten` cuts a line to a length and marks the cut with an ellipsis, so a reader never takes a
cut value for the whole one.
"""

import os
import signal
import threading
import unicodedata

INTERRUPTED = 130  # the exit code when no signal number is known (a bare KeyboardInterrupt)
RETRY_S = 0.01     # how soon a signal that came at an unsafe point is delivered again
REASONS = {signal.SIGINT: "interrupted by the operator",
           signal.SIGTERM: "terminated by SIGTERM",
           signal.SIGHUP: "the terminal hung up (SIGHUP)"}


class StopSignals:
    """Context manager: SIGINT, SIGTERM, SIGHUP raise KeyboardInterrupt once, then are ignored."""

    def __init__(self):
        self.received = None      # the signal number that ended the run, if one did
        self.armed = False
        self._previous = {}

    def __enter__(self):
        for signum in REASONS:
            try:
                if signal.getsignal(signum) != signal.SIG_IGN:
                    self._previous[signum] = signal.signal(signum, self._handle)
            except (ValueError, OSError):  # not the main thread: leave signals alone
                break
        self.armed = True
        return self

    def __exit__(self, *exc):
        self.armed = False
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()

    def _handle(self, signum, frame):
        if not self.armed:
            return
        if _unsafe(frame):
            timer = threading.Timer(RETRY_S, self._again, (signum,))
            timer.daemon = True
            timer.start()
            return
        self.armed, self.received = False, signum
        raise KeyboardInterrupt(REASONS[signum])

    def _again(self, signum):
        if self.armed:
            os.kill(os.getpid(), signum)

    def disarm(self):
        """From here on a signal is ignored: the outcome is being written."""
        self.armed = False

    def rearm(self):
        """Stop on the next signal again (--interactive: the next follow-up, or its prompt)."""
        if self._previous:
            self.received, self.armed = None, True

    def exit_code(self):
        """128 + the signal that ended the run (the shell's convention); 130 when none is known."""
        return 128 + self.received if self.received else INTERRUPTED


def _unsafe(frame):
    """True when `frame` (or a caller of it) is the import system or a finalizer, where an
    exception raised by a signal handler would be lost or changed on its way out."""
    while frame is not None:
        source = frame.f_code.co_filename   # `<frozen importlib._bootstrap>`, or the file itself
        if frame.f_code.co_name == "__del__" or "importlib._bootstrap" in source \
                or "importlib/_bootstrap" in source:
            return True
        frame = frame.f_back
    return False


def reason(exc):
    """The words for an interruption: the signal's, or ^C's for a bare KeyboardInterrupt."""
    return str(exc) or REASONS[signal.SIGINT]


class QuietStream:
    """A text stream for people's lines that never raises: what cannot be written is dropped."""

    def __init__(self, stream):
        self.stream = stream  # may be None: Python sets sys.stderr to None when fd 2 is closed

    def write(self, text):
        try:
            return self.stream.write(text)
        except (OSError, ValueError, AttributeError):  # gone, closed, full, or None
            return 0

    def flush(self):
        try:
            self.stream.flush()
        except (OSError, ValueError, AttributeError):
            pass

    def isatty(self):
        try:
            return self.stream.isatty()
        except (OSError, ValueError, AttributeError):
            return False

    def fileno(self):
        return self.stream.fileno()   # raises like the stream's own when there is none


def print_stdout(text):
    """Print `text` on stdout; if nobody is reading any more, stop writing stdout quietly."""
    try:
        print(text, flush=True)
    except (OSError, ValueError):
        silence_stdout()


def silence_stdout():
    """Point fd 1 at /dev/null: what is still buffered then flushes at exit without an error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def printable(text, *, keep_newlines=True) -> str:
    """Text with control and format characters escaped, safe to write to a terminal."""
    out = []
    for char in str(text):
        if char == "\n" and keep_newlines:
            out.append(char)
        elif char == "\t":
            out.append("    ")
        elif unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(char.encode("unicode_escape").decode("ascii"))
        else:
            out.append(char)
    return "".join(out)


ELLIPSIS = "\u2026"


def shorten(text, limit) -> str:
    """`text` cut to at most `limit` characters, the cut marked with an ellipsis."""
    text = str(text)
    return text if len(text) <= limit else text[:max(limit - 1, 0)] + ELLIPSIS
