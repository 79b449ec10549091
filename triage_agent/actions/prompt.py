"""Asking the operator on the controlling terminal: the approval prompt and `tty_approve`.

    tty_approve(proposal) -> (approved, note)
        opens /dev/tty (none: fails closed), drops keys typed before the prompt, shows the exact
        command, reads one line (EOF or the timeout: fails closed); "y"/"yes" approves, anything
        else denies and is passed to the model as the reason

This is the CLI's approve seam for actions.ActionGate; serve hands proposals to operators
instead (serve/approvals.py).
"""

import contextlib
import os
import select
import termios
import time

from triage_agent.terminal import printable

FAIL_CLOSED = "no terminal: approval fails closed"


def approval_prompt(proposal) -> str:
    """The text the operator sees before answering."""
    return (
        "\n=== triage-agent: approval needed ===\n"
        f"  kind:      {printable(proposal.kind, keep_newlines=False)}\n"
        f"  namespace: {printable(proposal.namespace, keep_newlines=False)}\n"
        f"  target:    {printable(proposal.target, keep_newlines=False)}\n"
        f"  reason:    {printable(proposal.reason, keep_newlines=False)}\n"
        f"  command:   {printable(proposal.command, keep_newlines=False)}\n"
        "Run this command? Type yes to approve; anything else denies it "
        "(your words are passed to the model as the reason): ")


def tty_approve(proposal, *, tty_path="/dev/tty", timeout=None) -> tuple:
    """Ask the operator on the controlling terminal: (approved, note); fails closed."""
    try:
        fd = os.open(tty_path, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return False, FAIL_CLOSED
    try:
        _discard_typeahead(fd)
        os.write(fd, approval_prompt(proposal).encode("utf-8", "replace"))
        line = _read_line(fd, timeout)
    except OSError:
        line = None
    except KeyboardInterrupt:   # ^C or a stop signal at the prompt: end the prompt's line,
        with contextlib.suppress(OSError):     # so the stop message does not land on it
            os.write(fd, b"\n")
        raise
    finally:
        os.close(fd)
    if line is None:
        return False, FAIL_CLOSED
    answer = printable(line.strip(), keep_newlines=False)
    if answer.lower() in ("y", "yes"):
        return True, "approved by the operator"
    return False, answer


def _discard_typeahead(fd):
    # keys pressed before the prompt was shown must not answer it
    try:
        termios.tcflush(fd, termios.TCIFLUSH)
    except termios.error:
        pass


def _read_line(fd, timeout, limit=4096) -> "str | None":
    """One line from a terminal fd; None on EOF or when `timeout` seconds pass."""
    deadline = None if timeout is None else time.monotonic() + timeout
    data = b""
    while b"\n" not in data and len(data) < limit:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
        chunk = os.read(fd, limit)
        if not chunk:
            return None
        data += chunk
    return data.split(b"\n", 1)[0].decode("utf-8", "replace")
