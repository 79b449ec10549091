"""The process's edges: the signals that end a run the way ^C does.

    SIGINT (^C), SIGTERM (`kill`, a CI timeout), SIGHUP (the operator's terminal went away)
      first one, while armed -> KeyboardInterrupt in the main thread: the loop turns it into
                                the outcome "interrupted"; the CLI closes the MCP server, prints
                                the outcome and exits 128 + the signal number (130, 143, 129)
      any later one          -> ignored: the wind-down (closing the MCP server, writing the
                                outcome) is bounded and must not be cut short half-way
      after disarm()         -> ignored: the run is over and its outcome is being written

A signal the process was started with ignored (`nohup`, a background job's SIGINT) stays ignored.
"""

import signal

INTERRUPTED = 130  # the exit code when no signal number is known (a bare KeyboardInterrupt)
REASONS = {signal.SIGINT: "interrupted by the operator",
           signal.SIGTERM: "terminated by SIGTERM",
           signal.SIGHUP: "the terminal hung up (SIGHUP)"}


class StopSignals:
    """Context manager: SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt once, then are ignored."""

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
        self.armed, self.received = False, signum
        raise KeyboardInterrupt(REASONS[signum])

    def disarm(self):
        """From here on a signal is ignored: the outcome is being written."""
        self.armed = False

    def exit_code(self):
        """128 + the signal that ended the run (the shell's convention); 130 when none is known."""
        return 128 + self.received if self.received else INTERRUPTED


def reason(exc):
    """The words for an interruption: the signal's, or ^C's for a bare KeyboardInterrupt."""
    return str(exc) or REASONS[signal.SIGINT]
