"""A bound on how long a call takes that a shared machine's stall does not fail.

`fastest` runs a call until one run is within the bound, at most `tries` times, and returns the
fastest run's seconds: a quadratic pattern takes minutes on every run, while a run that only
met a busy machine is followed by one that does not. The first run within the bound ends it, so
the usual case costs one run.
"""

import time


def fastest(call, *, within, tries=3):
    """(seconds of the fastest of up to `tries` runs of `call()`, stopping at the first within
    `within`; what the last run returned)."""
    best, result = float("inf"), None
    for _ in range(tries):
        started = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - started)
        if best < within:
            break
    return best, result
