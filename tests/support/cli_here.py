"""The triage CLI run in the test's own process, for tests of what it prints, records and
returns rather than of the process around it (no interpreter to start: about 0.13 s of CPU
saved a run; the project's MCP server runs in a thread too, tests/support/server_thread.py,
and the kubectl proxy under it is a real child process either way).

    out = run_main_here(["SYMPTOM", "--namespaces", "prod", ...], env=ENVIRONMENT, stdin="")
    out.returncode, out.stdout, out.stderr    # as subprocess.run(..., text=True) gives them

The CLI's tests call it through tests/agent/cli/test_cli.py's run_cli_here(*ARGS, env=EXTRA),
which adds the CLI tests' clean environment (no ANTHROPIC_* or OTEL_* of the developer's).

For the call, and restored after it: os.environ is `env` (the whole environment, as
subprocess.run's env= is; the MCP server and kubectl inherit it as they would the CLI's), the
working directory is `cwd`, sys.stdin reads `stdin`, sys.stdout and sys.stderr are in-memory
streams encoded as a child's pipes would be (UTF-8; stdout strict, stderr backslashreplace) and
read back with universal newlines as text=True does, the stop signals' handlers are the test's
again, and fd 1 is the test's again (terminal.silence_stdout points it at /dev/null when a
write to stdout fails). SystemExit becomes the exit code. Any other exception is not turned
into exit 1 and a traceback on stderr: it propagates, and the test fails on it. `timeout`
raises subprocess.TimeoutExpired from a SIGALRM timer (main thread only), after the CLI's own
cleanup ran. A ^C typed at the test run during a call ends the CLI's run (exit 130), as it would
end the process's, not the test run.

What this does not prove, so the tests of it start the real `python3 -m triage_agent`: a fresh
interpreter, __main__'s flush and os._exit, fds 0/1/2 of its own (here nothing is a terminal,
and /dev/tty is the test's, as it is for a child that shares the test's session; argparse wraps
--help to the width of the test's own stdout), a reader that closes the pipe, and signals sent
from outside (test_signals, test_streams, test_gates' pty).
"""

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from tests.support.server_thread import servers_in_threads

ROOT = Path(__file__).resolve().parents[2]
HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGALRM)


class _Timeout(BaseException):
    """Raised by the timer into the CLI; BaseException, so no `except Exception` keeps it."""


def run_main_here(args, *, env=None, stdin="", cwd=ROOT, timeout=60, entry=None,
                  server_thread=True):
    """triage_agent.cli.main(args) here (or another command's main(argv), `entry`): a
    CompletedProcess with its exit code and output. The project's MCP server runs in a thread
    (tests/support/server_thread.py) unless `server_thread` is False."""
    if entry is None:
        from triage_agent.cli import main as entry
    stdout, stderr = _pipe_like("strict"), _pipe_like("backslashreplace")
    servers = servers_in_threads() if server_thread else contextlib.nullcontext()
    with _process_state(env, cwd, stdin, stdout, stderr), _timer(timeout), servers:
        try:
            code = entry(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except _Timeout:
            raise subprocess.TimeoutExpired(["triage_agent", *args], timeout,
                                            _text(stdout), _text(stderr)) from None
    return subprocess.CompletedProcess(["triage_agent", *args], code or 0, _text(stdout),
                                       _text(stderr))


def _pipe_like(errors):
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)


def _text(stream):
    """What subprocess.run(text=True) would read: UTF-8, universal newlines."""
    stream.flush()
    data = stream.buffer.getvalue().decode("utf-8", "replace")
    return data.replace("\r\n", "\n").replace("\r", "\n")


@contextlib.contextmanager
def _process_state(env, cwd, stdin, stdout, stderr):
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_handlers = {signum: signal.getsignal(signum) for signum in HANDLED}
    saved_fd1 = os.dup(1)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8")), encoding="utf-8")
        sys.stdout, sys.stderr = stdout, stderr
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.dup2(saved_fd1, 1)
        os.close(saved_fd1)
        for signum, handler in saved_handlers.items():
            if handler is not None:
                signal.signal(signum, handler)
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


@contextlib.contextmanager
def _timer(timeout):
    if not timeout or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise _Timeout()
    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
