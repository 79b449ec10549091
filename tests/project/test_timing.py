"""tests/support/timing.py: a bound that a stall does not fail, and a slow call still does."""

from tests.support.timing import fastest


def test_the_first_run_within_the_bound_ends_it():
    calls = []
    seconds, result = fastest(lambda: calls.append(1) or len(calls), within=60)
    assert calls == [1] and result == 1 and 0 <= seconds < 60


def test_a_call_never_within_the_bound_runs_every_try_and_reports_its_fastest():
    calls = []
    seconds, result = fastest(lambda: calls.append(1) or len(calls), within=0, tries=3)
    assert len(calls) == 3 and result == 3 and seconds >= 0   # the caller's assert then fails
