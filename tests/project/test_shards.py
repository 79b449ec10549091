"""`make test`'s shards: every test runs exactly once across them, and a failure in any shard is
the run's exit code (tests/support/shard.py, tests/support/run_shards.py; real pytest runs on a generated file)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# No plugin autoload: only ours matter, and an installed one (hypothesis) costs a second per run.
ENV = dict(os.environ, PYTHONPATH=ROOT, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")


def generated(tmp_path, failing=False):
    """Seven passing tests; 1 and 3 are marked slow (plain interleaving would put both in 2/2)."""
    marks = {1: "@pytest.mark.slow(reason='x')\n", 3: "@pytest.mark.slow(reason='x')\n"}
    body = "import pytest\n\n" + "".join(f"{marks.get(i, '')}def test_{i}():\n    pass\n\n"
                                         for i in range(7))
    if failing:
        body += "def test_failing():\n    assert 1 == 2\n"
    path = tmp_path / "test_generated.py"
    path.write_text(body)
    return str(path)


def passed(stdout):
    return {line.split("::")[1] for line in stdout.splitlines()
            if line.startswith("PASSED ") and "::" in line}


def shard(tmp_path, value):
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.support.shard", "-p",
                           "tests.support.time_limit", "-p", "no:cacheprovider", "-rA", "-q", "--shard",
                           value, generated(tmp_path)], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=60)


def test_the_shards_split_the_tests_without_overlap_or_gap_and_deal_out_the_slow_ones(tmp_path):
    first, second = shard(tmp_path, "1/2"), shard(tmp_path, "2/2")
    assert first.returncode == second.returncode == 0, first.stdout + second.stdout
    assert passed(first.stdout) == {"test_0", "test_1", "test_4", "test_6"}
    assert passed(second.stdout) == {"test_2", "test_3", "test_5"}


def test_a_bad_shard_is_a_usage_error(tmp_path):
    for value in ("3/2", "0/2", "half"):
        done = shard(tmp_path, value)
        assert done.returncode == 4 and "--shard" in done.stderr, value
        assert "Traceback" not in done.stderr


def test_run_shards_runs_every_test_once_and_fails_when_one_shard_fails(tmp_path):
    done = subprocess.run([sys.executable, "-m", "tests.support.run_shards", "--shards", "2", "-p",
                           "tests.support.time_limit", "-rA", "-q", generated(tmp_path, failing=True)],
                          cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=60)
    assert "=== shard 1/2 ===" in done.stdout and "=== shard 2/2 ===" in done.stdout
    assert passed(done.stdout) == {f"test_{i}" for i in range(7)}
    assert done.stdout.count("FAILED ") == 1 and "assert 1 == 2" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1] == "total: 7 passed, 1 failed, 0 skipped"
    assert done.returncode == 1
