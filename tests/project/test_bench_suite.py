"""make bench-suite (tests/bench/suite.py): a round runs the clone's real `make test` between its
reference timings and reports what it printed last and how it ended; with --against, two commits
of a real git repository are measured in turns and the share printed; a run started with SIGINT
ignored gives its children SIGINT as usual; bad arguments are usage errors. (The whole measure,
on this project, is what `make bench-suite` is for: not a test.)"""

import re
import signal
import subprocess
import sys

import pytest

from tests.bench import suite

MAKEFILE = "test:\n\t@echo collecting\n\t@echo '3 passed in 0.01s'\n\t@exit $(CODE)\n"


def cheap_reference(monkeypatch):
    """The reference a no-op, timed once before `make test` and once after (not three times)."""
    monkeypatch.setattr(suite, "REFERENCE", [sys.executable, "-c", "pass"])
    monkeypatch.setattr(suite, "REFERENCES", 1)


@pytest.mark.parametrize("code", [0, 1])
def test_a_round_reports_the_last_line_and_the_exit_of_make_test(tmp_path, monkeypatch, code):
    (tmp_path / "Makefile").write_text(MAKEFILE.replace("$(CODE)", str(code)))
    cheap_reference(monkeypatch)
    wall, cpu, ref, last, rc = suite.round_in(tmp_path)
    assert (last, rc != 0) == ("3 passed in 0.01s", bool(code))
    assert wall > 0 and ref > 0 and cpu >= 0


def test_rounds_must_be_one_or_more(capsys):
    with pytest.raises(SystemExit) as exited:
        suite.main(["--rounds", "0"])
    assert exited.value.code == 2 and "--rounds must be 1 or more" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["rev", "against"])
@pytest.mark.parametrize("rev", ["no-such-revision-here", "HEAD:README.md", "HEAD^{tree}"])
def test_only_a_commit_is_measured(rev, where, capsys):
    assert suite.main([rev] if where == "rev" else ["HEAD", "--against", rev]) == 2
    assert f"{rev!r} is no commit of this checkout" in capsys.readouterr().err


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], check=True, capture_output=True, text=True).stdout.strip()


def measured_repo(tmp_path, monkeypatch, *makefiles):
    """A git repository with one commit per Makefile text, made the checkout bench-suite
    clones (and its reference a cheap no-op); the commits' short hashes, oldest first."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    revs = []
    for text in makefiles:
        (repo / "Makefile").write_text(text)
        git(repo, "add", "Makefile")
        git(repo, "commit", "-q", "-m", f"commit {len(revs)}")
        revs.append(git(repo, "rev-parse", "--short", "HEAD"))
    monkeypatch.setattr(suite, "ROOT", str(repo))
    cheap_reference(monkeypatch)
    return revs


def test_against_measures_both_commits_in_turns_and_prints_the_share(tmp_path, monkeypatch,
                                                                     capsys):
    base, rev = measured_repo(tmp_path, monkeypatch,   # BASE fails, REV passes
                              "test:\n\t@echo '1 failed in 0.01s'\n\t@exit 1\n",
                              "test:\n\t@echo '2 passed in 0.01s'\n\t@exit 0\n")
    assert suite.main(["HEAD", "--against", "HEAD~1", "--rounds", "2"]) == 1   # BASE failed
    out = capsys.readouterr().out.splitlines()
    runs = [re.match(r"round (\d): (\w+) make test .* units; rc=(\d): (.*)$", line)
            for line in out if line.startswith("round") and " make test " in line]
    assert [(m[1], m[2], m[3], m[4]) for m in runs] == [
        ("1", rev, "0", "2 passed in 0.01s"), ("1", base, "2", "1 failed in 0.01s"),
        ("2", base, "2", "1 failed in 0.01s"), ("2", rev, "0", "2 passed in 0.01s")]
    shares = [line for line in out if " took " in line and line.startswith("round")]
    assert [line.split(":")[0] for line in shares] == ["round 1", "round 2"]
    assert all(re.fullmatch(rf"round \d: {rev} took \d+\.\d\d of {base}'s time", line)
               for line in shares)
    assert re.fullmatch(rf"median \d+ units for {rev}, \d+ units for {base}; {rev} took "
                        rf"\d+\.\d\d of {base}'s time over 2 round\(s\); 2 run\(s\) failed",
                        out[-1])


CHILD_SIGINT = [sys.executable, "-c", "import signal; h = signal.getsignal(signal.SIGINT); print("
                "'ignored' if h is signal.SIG_IGN else 'usual' if h is signal.default_int_handler "
                "else h)"]


def test_a_run_started_with_sigint_ignored_gives_its_suites_sigint_as_usual():
    before = signal.getsignal(signal.SIGINT)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)   # as in a background job or under nohup
        ignored = subprocess.run(CHILD_SIGINT, capture_output=True, text=True).stdout
        suite.interrupts_as_usual()
        usual = subprocess.run(CHILD_SIGINT, capture_output=True, text=True).stdout
    finally:
        signal.signal(signal.SIGINT, before)
    assert ignored == "ignored\n"    # what the children would have had
    assert usual == "usual\n"        # Python's own handler, as when started from a shell


def test_a_commit_against_itself_keeps_its_two_runs_apart(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "ran-once"
    # the first run of the two is the slow one: the share must be of two runs, not of one by itself
    rev, = measured_repo(tmp_path, monkeypatch,
                         f"test:\n\t@[ -e {marker} ] || {{ touch {marker}; sleep 0.3; }}"
                         "\n\t@echo '1 passed in 0.01s'\n")
    assert suite.main(["HEAD", "--against", "HEAD", "--rounds", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sum(line.startswith(f"round 1: {rev} make test ") for line in out) == 2
    share = re.fullmatch(rf"round 1: {rev} took (\d+\.\d\d) of {rev}'s time", out[-2])
    assert share and float(share[1]) > 1.5, out   # one run by itself would give 1.00
    assert re.fullmatch(rf"median \d+ units for {rev}, \d+ units for {rev}; {rev} took "
                        rf"\d+\.\d\d of {rev}'s time over 1 round\(s\)", out[-1])


@pytest.mark.parametrize("fresh", [False, True])
def test_fresh_venv_gives_each_round_an_empty_venv_cache_of_its_own(tmp_path, monkeypatch, capsys,
                                                                    fresh):
    measured_repo(tmp_path, monkeypatch,
                  "test:\n\t@echo \"cache=$${TRIAGE_TEST_VENV_CACHE-unset} 1 passed\"\n")
    monkeypatch.delenv("TRIAGE_TEST_VENV_CACHE", raising=False)
    assert suite.main(["HEAD", "--rounds", "2"] + ["--fresh-venv"] * fresh) == 0
    caches = re.findall(r"cache=(\S+) 1 passed", capsys.readouterr().out)
    if fresh:
        assert len(set(caches)) == 2 and all(c.endswith("/venvs") for c in caches)
    else:
        assert caches == ["unset", "unset"]
