"""--interactive: after the report (or the first answer), a `follow-up> ` prompt on the
terminal; each line is asked as a follow-up of the same session.

    follow-up> why did it start after the deploy?     -> asked; the answer is printed
    follow-up> (empty line) or ^D                     -> the prompt ends
    ^C during a follow-up                             -> that follow-up ends (stop interrupted);
                                                         the prompt comes back
    ^C at the prompt, SIGTERM or SIGHUP               -> the prompt ends

The exit code is the run's (or the first answer's), unless SIGTERM or SIGHUP ended things.
"""

import signal
import sys

from triage_agent.options import UsageError

PROMPT = "follow-up> "


def read_question(stdin, stderr):
    """The next line typed at the prompt, None at an empty line or end of input."""
    stderr.write(PROMPT)
    stderr.flush()
    line = stdin.readline()
    if not line:
        stderr.write("\n")
        return None
    return line.strip() or None


def prompt_loop(ask, signals, stderr, code, *, stdin=None):
    """Ask each line typed with `ask(question) -> exit code` until the operator stops."""
    stdin = stdin or sys.stdin
    while True:
        signals.rearm()
        try:
            question = read_question(stdin, stderr)
        except KeyboardInterrupt:
            signals.disarm()
            stderr.write("\n")
            return code if signals.received in (None, signal.SIGINT) else signals.exit_code()
        signals.disarm()
        if question is None:
            return code
        try:
            ask(question)
        except UsageError as exc:
            print(f"triage-agent: {exc}", file=stderr)
        except KeyboardInterrupt:  # before the loop took over (the server starting): same
            signals.disarm()
            print("triage-agent: follow-up interrupted", file=stderr)
        if signals.received not in (None, signal.SIGINT):  # SIGTERM or SIGHUP: stop asking
            return signals.exit_code()
