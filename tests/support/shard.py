"""pytest plugin: `--shard K/N` keeps every N-th collected test, starting with the K-th.

    python3 -m pytest -p tests.support.shard --shard 1/2      # and, at the same time, --shard 2/2

N processes with shards 1/N .. N/N run each test exactly once between them. Interleaving (not
halves of the file list) spreads a file's slow tests over the shards; the tests marked slow
(tests/support/time_limit.py) are dealt out among themselves, so that they do not land in one shard.
tests/support/run_shards.py runs the shards side by side for `make test`; without the option nothing is
left out. `--shard-counts FILE` writes the shard's outcome counts as JSON at the end, so that
run_shards can print one total for the whole suite.
"""

import json

import pytest


def parse_shard(value):
    """(k, n) from "K/N" with 1 <= K <= N; UsageError otherwise."""
    try:
        k, n = (int(part) for part in value.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard {value!r}: expected K/N, e.g. 1/2") from None
    if not 1 <= k <= n:
        raise pytest.UsageError(f"--shard {value!r}: K must be from 1 to N")
    return k, n


def pytest_addoption(parser):
    parser.addoption("--shard", default=None, metavar="K/N",
                     help="run only every N-th collected test, starting with the K-th")
    parser.addoption("--shard-counts", default=None, metavar="FILE",
                     help="write this run's passed/failed/error/skipped counts here as JSON")


def pytest_terminal_summary(terminalreporter, config):
    path = config.getoption("shard_counts")
    if path:
        counts = {kind: len(terminalreporter.stats.get(kind, []))
                  for kind in ("passed", "failed", "error", "skipped")}
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(counts, handle)


def pytest_configure(config):
    value = config.getoption("shard")
    if value is not None:
        parse_shard(value)  # a bad value stops the run before collection


def pytest_collection_modifyitems(config, items):
    value = config.getoption("shard")
    if value is None:
        return
    k, n = parse_shard(value)
    ours = set()
    for slow in (True, False):
        group = [item for item in items if bool(item.get_closest_marker("slow")) is slow]
        ours.update(id(item) for item in group[k - 1::n])
    kept = [item for item in items if id(item) in ours]
    dropped = [item for item in items if id(item) not in ours]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
