"""The model's search pattern: what check_pattern refuses (each with a way to rewrite it), what it
lets through, and the matching budget that stops a slow pattern (MatchClock) on the main thread,
where a timer interrupts one long search, and on any other thread, between lines."""

import re
import threading
import time

import pytest

from mcp_kubectl_server.digests.logpattern import (PATTERN_MAX, MatchClock, MatchTimeError, check_pattern,
                                                   compile_pattern)

REFUSED = {
    "(a+)+": "repeated group", "(a|aa)*$": "repeated group", "(\\w+\\s?)*x": "repeated group",
    "(?:ab*)+": "repeated group", "((a){2,3}){2}": "repeated group", "(error|fatal)+": "repeated group",
    "a(?=b)": "lookarounds", "(?<!x)y": "lookarounds", "(?!a)b": "lookarounds", "(?<=a)b": "lookarounds",
    "(x)\\1": "backreferences", "(?P<n>x)(?P=n)": "backreferences",
    "(a)?(?(1)b|c)": "conditional", "(": "not a valid regular expression", "a{2,1}": "not a valid",
    "": "non-empty", "x" * (PATTERN_MAX + 1): "at most 200 characters",
}
ACCEPTED = ["error|fatal", "connection (refused|reset)", "status=5[0-9][0-9]", "[a-z]+ timeout",
            "a.*b", "(?i)panic: .*", "(ab){2,5}", "x{3}", "([ab])+", "(abc)+", "deadlock|40P01",
            r"\bOOM\b", "took [0-9]{4,}ms", "^FATAL"]


@pytest.mark.parametrize("pattern", sorted(REFUSED))
def test_unsafe_or_broken_patterns_are_refused_with_a_way_out(pattern):
    message = check_pattern("pattern", pattern)
    assert message and message.startswith("pattern: ") and REFUSED[pattern] in message


@pytest.mark.parametrize("pattern", ACCEPTED)
def test_ordinary_patterns_pass(pattern):
    assert check_pattern("pattern", pattern) is None
    compile_pattern(pattern, ignore_case=True)


def test_not_a_string_is_refused():
    assert "non-empty" in check_pattern("pattern", 42)


def _slow_scan(clock, regex, lines):
    found = 0
    for line in lines:
        if clock.expired():
            return "expired", found
        found += bool(clock.search(regex, line))
    return "done", found


SLOW = re.compile("a.*a.*a.*a.*a.*b")   # passes the checks, takes minutes on a long line of a's


def test_the_timer_interrupts_one_long_search_on_the_main_thread():
    assert check_pattern("pattern", SLOW.pattern) is None
    assert threading.current_thread() is threading.main_thread()
    started = time.monotonic()
    with pytest.raises(MatchTimeError), MatchClock(0.2) as clock:
        _slow_scan(clock, SLOW, ["a" * 3000])
    assert time.monotonic() - started < 5


def test_off_the_main_thread_the_budget_is_checked_after_each_search():
    result, started = {}, time.monotonic()

    def scan():
        try:
            with MatchClock(0.2) as clock:
                result["value"] = _slow_scan(clock, SLOW, ["a" * 25] * 100_000)   # each search short
        except MatchTimeError:
            result["value"] = ("stopped", clock.spent)
    worker = threading.Thread(target=scan)
    worker.start()
    worker.join(30)
    # every line in full would take minutes; a budget of 0.2 s of searching stops it at once
    assert result["value"][0] == "stopped" and time.monotonic() - started < 10


def test_a_clock_that_did_not_expire_leaves_no_timer_behind():
    import signal
    before = signal.getsignal(signal.SIGALRM)
    with MatchClock(5) as clock:
        assert clock.search(re.compile("b"), "abc")
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) == before


def test_only_searching_is_charged_not_waiting():
    with MatchClock(0.001) as clock:
        passed = time.perf_counter() + 0.003
        while time.perf_counter() < passed:   # time passing outside search: waiting for the cluster
            pass
        assert not clock.expired()
        with pytest.raises(MatchTimeError):
            clock.charge(0.002)
    assert clock.expired()
