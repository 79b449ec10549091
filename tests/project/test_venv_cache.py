"""The test venv kept once per machine (tests/support/venv_cache.py): a checkout links to the venv
of its pins, a build becomes one only when whole, and the cache stays bounded."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import venv_cache
from tests.support.venv_cache import KEEP, REQUIREMENTS, STALE_BUILD_S, main

ROOT = Path(__file__).resolve().parents[2]
PINS = b"pytest==9.0.3\n"


def checkout(where, pins=PINS):
    """A directory with the one file the cache reads, tests/requirements.txt."""
    (where / "tests").mkdir(parents=True)
    (where / REQUIREMENTS).write_bytes(pins)
    return where


def run(verb, tree, cache):
    return main([verb], checkout=tree, environ={"TRIAGE_TEST_VENV_CACHE": str(cache)})


def build(tree, cache, contents="whole"):
    """begin, something written through .venv as the Makefile's recipe writes, keep."""
    assert run("begin", tree, cache) == 0
    (tree / ".venv" / "made").write_text(contents)
    assert run("keep", tree, cache) == 0


def test_the_key_changes_with_the_pins_the_interpreter_and_its_version():
    one = venv_cache.key(PINS, executable="/usr/bin/python3", version="3.11.7")
    assert one == venv_cache.key(PINS, executable="/usr/bin/python3", version="3.11.7")
    assert one != venv_cache.key(PINS + b"PyYAML==6.0.3\n", executable="/usr/bin/python3",
                                 version="3.11.7")
    assert one != venv_cache.key(PINS, executable="/usr/bin/python3.12", version="3.11.7")
    assert one != venv_cache.key(PINS, executable="/usr/bin/python3", version="3.12.1")


def test_where_the_cache_is(tmp_path):
    assert venv_cache.cache_dir({"TRIAGE_TEST_VENV_CACHE": str(tmp_path)}) == tmp_path
    assert venv_cache.cache_dir({"TRIAGE_TEST_VENV_CACHE": ""}) is None
    assert (venv_cache.cache_dir({"XDG_CACHE_HOME": str(tmp_path)})
            == tmp_path / "triage-agent" / "test-venvs")


def test_a_finished_build_serves_every_checkout_of_the_same_pins(tmp_path):
    cache, first, second = tmp_path / "cache", checkout(tmp_path / "a"), checkout(tmp_path / "b")
    assert run("link", first, cache) == 1 and not (first / ".venv").exists()
    assert run("begin", first, cache) == 0
    assert (first / ".venv").resolve().name.startswith("build-")
    (first / ".venv" / "made").write_text("whole")
    assert run("keep", first, cache) == 0
    kept = cache / venv_cache.key(PINS)
    assert (first / ".venv").resolve() == kept and (kept / "made").read_text() == "whole"
    assert not list(cache.glob("build-*"))

    (second / ".venv").mkdir()   # an earlier venv of its own, not whole (else not asked)
    assert run("link", second, cache) == 0
    assert (second / ".venv").is_symlink() and (second / ".venv" / "made").read_text() == "whole"


def test_other_pins_and_an_unfinished_build_are_never_linked(tmp_path):
    cache, building = tmp_path / "cache", checkout(tmp_path / "a")
    assert run("begin", building, cache) == 0
    (building / ".venv" / "made").write_text("half")
    other = checkout(tmp_path / "b", PINS + b"PyYAML==6.0.3\n")
    build(other, cache)
    late = checkout(tmp_path / "c")
    assert run("link", late, cache) == 1 and not (late / ".venv").exists()


def test_two_builds_of_the_same_pins_at_once_both_end_on_the_first_to_finish(tmp_path):
    cache, first, second = tmp_path / "cache", checkout(tmp_path / "a"), checkout(tmp_path / "b")
    run("begin", first, cache)
    run("begin", second, cache)
    (first / ".venv" / "made").write_text("first")
    (second / ".venv" / "made").write_text("second")
    assert run("keep", first, cache) == 0 and run("keep", second, cache) == 0
    assert (first / ".venv").resolve() == (second / ".venv").resolve()
    assert (second / ".venv" / "made").read_text() == "first"
    assert not list(cache.glob("build-*"))


def test_the_cache_keeps_the_venvs_used_last_and_young_builds(tmp_path):
    cache = tmp_path / "cache"
    now = 1_000_000_000
    venvs = []
    for age in range(KEEP + 2):   # venv-0 used last
        venvs.append(cache / f"venv-{age}")
        venvs[-1].mkdir(parents=True)
        os.utime(venvs[-1], (now - age, now - age))
    stale, young = cache / "build-stale", cache / "build-young"
    for path, age in ((stale, STALE_BUILD_S + 1), (young, 10)):
        path.mkdir()
        os.utime(path, (now - age, now - age))
    venv_cache.prune(cache, keep_also=venvs[-1], now=now)
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        [p.name for p in venvs[:KEEP - 1]] + [venvs[-1].name, young.name])


def test_linking_makes_a_venv_the_one_used_last(tmp_path):
    cache, tree = tmp_path / "cache", checkout(tmp_path / "a")
    build(tree, cache)
    kept = cache / venv_cache.key(PINS)
    os.utime(kept, (1, 1))
    assert run("link", tree, cache) == 0 and kept.stat().st_mtime > 1


def test_with_the_cache_off_the_checkout_keeps_its_own_venv(tmp_path):
    tree = checkout(tmp_path / "a")
    (tree / ".venv").mkdir()
    off = {"TRIAGE_TEST_VENV_CACHE": ""}
    assert main(["link"], checkout=tree, environ=off) == 1
    assert main(["begin"], checkout=tree, environ=off) == 0
    assert main(["keep"], checkout=tree, environ=off) == 0
    assert (tree / ".venv").is_dir() and not (tree / ".venv").is_symlink()


def test_with_the_cache_off_a_build_never_writes_into_a_kept_venv(tmp_path):
    cache, tree = tmp_path / "cache", checkout(tmp_path / "a")
    build(tree, cache)
    (tree / REQUIREMENTS).write_bytes(PINS + b"PyYAML==6.0.3\n")   # new pins, built in place
    assert main(["begin"], checkout=tree, environ={"TRIAGE_TEST_VENV_CACHE": ""}) == 0
    assert not (tree / ".venv").exists()
    assert (cache / venv_cache.key(PINS) / "made").read_text() == "whole"


def test_a_wrong_verb_is_a_usage_error(tmp_path, capsys):
    assert main(["clean"], checkout=tmp_path, environ={}) == 2
    assert "link|begin|keep" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_deps_links_a_fresh_checkout_to_the_kept_venv_and_installs_nothing(tmp_path):
    tree = tmp_path / "clone"
    for name in ("Makefile", REQUIREMENTS, "tests/__init__.py", "tests/support/__init__.py",
                 "tests/support/venv_cache.py"):
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tree / name)
    cache = tmp_path / "cache"
    kept = cache / venv_cache.key((ROOT / REQUIREMENTS).read_bytes())
    for part in ("rest", "schemas/unpacked"):   # what the Makefile asks of a whole venv
        (kept / part).mkdir(parents=True)
    shutil.copy(ROOT / REQUIREMENTS, kept / "requirements.txt")
    done = subprocess.run(["make", "--no-print-directory", "test-deps", f"PYTHON={sys.executable}"],
                          cwd=tree, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "TRIAGE_TEST_VENV_CACHE": str(cache)})
    assert done.returncode == 0, done.stderr
    assert "installing" not in done.stdout + done.stderr
    assert f"using the test venv kept for these pins: .venv -> {kept}" in done.stdout
    assert (tree / ".venv").resolve() == kept


def test_a_kept_venv_that_is_not_whole_is_built_again(tmp_path):
    cache, tree = tmp_path / "cache", checkout(tmp_path / "a")
    build(tree, cache, contents="first")
    kept = cache / venv_cache.key(PINS)
    (kept / "made").unlink()   # the Makefile found it lacking
    (kept / "left-over").write_text("")
    build(tree, cache, contents="again")
    assert (tree / ".venv" / "made").read_text() == "again"
    assert not list(cache.glob("build-*"))


def test_a_cache_that_cannot_be_written_leaves_the_build_in_the_checkout(tmp_path, capsys):
    tree = checkout(tmp_path / "a")
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    assert run("begin", tree, blocked / "cache") == 0
    assert not (tree / ".venv").exists()   # the Makefile's recipe makes it, in the checkout
    assert "cannot be written" in capsys.readouterr().err
    (tree / ".venv").mkdir()
    assert run("keep", tree, blocked / "cache") == 0 and not (tree / ".venv").is_symlink()


def test_a_build_that_is_gone_by_keep_is_one_line_and_exit_1(tmp_path, capsys):
    cache, tree = tmp_path / "cache", checkout(tmp_path / "a")
    run("begin", tree, cache)
    shutil.rmtree((tree / ".venv").resolve())
    assert run("keep", tree, cache) == 1
    err = capsys.readouterr().err
    assert err.startswith("venv_cache keep: ") and "Traceback" not in err
