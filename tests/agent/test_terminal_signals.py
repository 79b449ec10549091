"""terminal.StopSignals in this process: a stop signal that arrives where an exception would be
lost or mangled (inside an import, inside a finalizer) is raised a moment later, once the main
thread is out of there, and a signal at an ordinary point is raised at once.

Found as a rare failure of tests/agent/cli/test_signals.py (SIGTERM during start-up): the CLI's
lazy imports run while the handler is armed, and a KeyboardInterrupt raised in the import lock's
weakref callback was printed and dropped (the run then waited 15 s for a stalled server), while
one raised in a dataclass's `__set_name__` came out as a RuntimeError with a traceback."""

import signal
import sys
import threading

import pytest

from triage_agent import terminal

WAIT_S = 5   # a bound for the wait on the raise, which comes within RETRY_S


def interrupted_by(action):
    """How `action()` and a wait after it end: ('at once' | 'later' | 'never', the interrupt's
    words, the exit code StopSignals gives)."""
    with terminal.StopSignals() as signals:
        try:
            action()
        except KeyboardInterrupt as exc:
            return "at once", str(exc), signals.exit_code()
        try:
            threading.Event().wait(WAIT_S)
        except KeyboardInterrupt as exc:
            return "later", str(exc), signals.exit_code()
    return "never", None, None


def test_a_signal_at_an_ordinary_point_is_raised_at_once():
    assert interrupted_by(lambda: signal.raise_signal(signal.SIGTERM)) == (
        "at once", "terminated by SIGTERM", 143)


def test_a_signal_inside_an_import_is_raised_after_it_and_the_module_is_whole(tmp_path,
                                                                              monkeypatch):
    (tmp_path / "signalled_module.py").write_text(
        "import signal\n"
        "class Named:\n"
        "    def __set_name__(self, owner, name):\n"
        "        signal.raise_signal(signal.SIGTERM)   # as a dataclass field's would run\n"
        "class Holder:\n"
        "    field = Named()\n"
        "WHOLE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "signalled_module", raising=False)
    assert interrupted_by(lambda: __import__("signalled_module")) == (
        "later", "terminated by SIGTERM", 143)
    assert sys.modules["signalled_module"].WHOLE


def test_a_signal_inside_a_finalizer_is_raised_after_it():
    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGHUP)

    def drop():
        Finalized()   # dropped at once: its __del__ runs here
    assert interrupted_by(drop) == ("later", "the terminal hung up (SIGHUP)", 129)


def test_a_deferred_signal_is_dropped_once_the_run_is_over():
    """Deferred, then the run disarms and the handlers are given back (here ^C's default one,
    which raises KeyboardInterrupt): the retry must not reach them."""
    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)

    with terminal.StopSignals() as signals:
        Finalized()
        signals.disarm()
    waited = threading.Event()
    threading.Timer(terminal.RETRY_S * 5, waited.set).start()
    try:
        assert waited.wait(WAIT_S)   # well after the retry would have come
    except KeyboardInterrupt:
        pytest.fail("the deferred ^C was delivered after the run was over")
    assert signals.received is None


@pytest.fixture(autouse=True)
def main_thread_only():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are installed in the main thread only")
