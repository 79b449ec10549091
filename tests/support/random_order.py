"""pytest plugin: a run that failed says which random order it ran in.

Every run of the suite takes its tests in a random order (pytest-randomly, pinned in
tests/requirements.txt: the modules shuffled, then the tests within each), so a test that passes
only after, or only without, another one fails here rather than under xdist some day, where
which tests share a worker already varies from run to run. With `-q` (the suite's addopts) the
plugin's header line is not shown; when a test failed, this names the seed at the end, before
the total line, so the same order can be run again:

    python3 -m pytest -p no:xdist --randomly-seed=N     # one process: exactly that order

`-p no:randomly` runs the collection order. tests/conftest.py loads this plugin.
"""

SEED = "randomly_seed"   # pytest-randomly's option (config.option), set once it is configured


def seed_of(config):
    """The seed this run's order came from, or None without pytest-randomly."""
    if not config.pluginmanager.hasplugin("randomly"):
        return None
    return getattr(config.option, SEED, None)


def pytest_terminal_summary(terminalreporter, config):
    seed = seed_of(config)
    failed = terminalreporter.stats.get("failed") or terminalreporter.stats.get("error")
    if seed is None or not failed:
        return
    terminalreporter.write_line(f"tests ran in a random order: --randomly-seed={seed} runs it "
                                "again (with -p no:xdist, exactly: tests/support/random_order.py)")
