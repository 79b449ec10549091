"""pytest plugin: the tests that take longer than a few seconds are named at the end of the run.

    @pytest.mark.slow(reason="what it proves is slow")     # exempt, with the reason on record

A test's time is its setup plus its call (what `--durations` shows for it). By default a passing
test over the limit stays passed and is listed in a section at the end of the run ("tests over
the time limit"), so a new poll or fixed sleep shows up without a shared machine failing the
build for its neighbours' work: wall time is not a verdict there (a CI machine took 3.3 s for a
test that takes 0.7 s alone). The default limit is TIME_LIMIT seconds, stretched on a machine
busier than its cores (by the 1-minute load average per core).

TRIAGE_TEST_MAX_SECONDS=N makes the limit strict: a passing test over N seconds fails, with its
time and the limit (for hunting waits on a quiet machine); 0 turns the check off.

The tests marked slow run first, in the order the run drew for them (pytest-randomly's): under
xdist, one dealt out last kept the other workers idle while it ran (the 4 s of the CLI's MCP
close sequence, tests/agent/cli/test_signals.py, left both cores idle for 3.7 s at the end of a
30 s run), where at the start its waits overlap the rest of the suite.
tests/conftest.py loads this plugin.
"""

import os

import pytest

TIME_LIMIT = 3.0
ENV = "TRIAGE_TEST_MAX_SECONDS"
OVER = "over_time_limit"             # the user_properties key a test over the default limit gets
ADVICE = ("Find the waiting (a poll, a fixed sleep, a long timeout) and remove it; if what the "
          "test proves is slow, mark it @pytest.mark.slow(reason=...).")
_FIXED = pytest.StashKey[object]()   # on the config: the limit from ENV, or None
_SETUP = pytest.StashKey[float]()    # on a test item: its setup time


def fixed_limit():
    """The limit TRIAGE_TEST_MAX_SECONDS sets, or None when it is not set."""
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise pytest.UsageError(f"{ENV}={raw!r}: expected a number of seconds (0 turns the "
                                "per-test time limit off)") from None
    if value < 0:
        raise pytest.UsageError(f"{ENV}={raw!r}: must be 0 or more seconds")
    return value


def load_factor():
    """1, or the 1-minute load average per core when the machine is busier than its cores."""
    try:
        return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    except OSError:  # no load average on this platform
        return 1.0


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow(reason): the test is slow because what it proves is slow; exempt from "
                   f"the per-test time limit ({ENV}, default {TIME_LIMIT:g} s)")
    config.stash[_FIXED] = fixed_limit()  # read once, so a bad value stops the run at start
    config.pluginmanager.register(_Listing(), "time_limit_listing")


@pytest.hookimpl(trylast=True)   # after pytest-randomly's shuffle
def pytest_collection_modifyitems(items):
    """The tests marked slow first (see the module docstring), each part in its drawn order."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "setup":
        item.stash[_SETUP] = report.duration
        return
    if report.when != "call" or not report.passed or item.get_closest_marker("slow"):
        return
    fixed = item.config.stash[_FIXED]
    limit = TIME_LIMIT * load_factor() if fixed is None else fixed
    spent = item.stash.get(_SETUP, 0.0) + report.duration
    if not limit or spent <= limit:
        return
    if fixed is None:  # listed at the end (this report travels from an xdist worker as it is)
        report.user_properties.append((OVER, (spent, limit)))
        return
    report.outcome = "failed"
    report.longrepr = (f"{item.nodeid} took {spent:.2f} s (setup and call), over the "
                       f"{limit:.3g} s limit for one test. {ADVICE} To set the limit: "
                       f"{ENV}=SECONDS (0: off).")


class _Listing:
    """The tests over the default limit, gathered where the results are (the xdist controller
    too: the reports travel from the workers with their user_properties) and listed at the end."""

    def __init__(self):
        self.over = []  # (nodeid, seconds, limit)

    def pytest_runtest_logreport(self, report):
        self.over += [(report.nodeid, *value) for key, value in report.user_properties
                      if key == OVER]

    def pytest_terminal_summary(self, terminalreporter):
        if not self.over:
            return
        terminalreporter.section("tests over the time limit")
        for nodeid, spent, limit in sorted(self.over, key=lambda row: -row[1]):
            terminalreporter.line(f"{spent:.2f} s  {nodeid} (limit {limit:.3g} s)")
        terminalreporter.line(
            f"{len(self.over)} passing test(s) over the limit, listed and not failed: wall time "
            f"on a shared machine is not a verdict. {ADVICE} {ENV}=SECONDS makes the limit "
            f"strict (0: off).")
