"""make bench-suite (tests/bench/suite.py): a round runs the clone's real `make test` between its
reference timings and reports what it printed last and how it ended; bad arguments are usage
errors. (The whole measure, on this project, is what `make bench-suite` is for: not a test.)"""

import sys

import pytest

from tests.bench import suite

MAKEFILE = "test:\n\t@echo collecting\n\t@echo '3 passed in 0.01s'\n\t@exit $(CODE)\n"


@pytest.mark.parametrize("code", [0, 1])
def test_a_round_reports_the_last_line_and_the_exit_of_make_test(tmp_path, monkeypatch, code):
    (tmp_path / "Makefile").write_text(MAKEFILE.replace("$(CODE)", str(code)))
    monkeypatch.setattr(suite, "REFERENCE", [sys.executable, "-c", "pass"])
    wall, cpu, ref, last, rc = suite.round_in(tmp_path)
    assert (last, rc != 0) == ("3 passed in 0.01s", bool(code))
    assert wall > 0 and ref > 0 and cpu >= 0


def test_rounds_must_be_one_or_more(capsys):
    with pytest.raises(SystemExit) as exited:
        suite.main(["--rounds", "0"])
    assert exited.value.code == 2 and "--rounds must be 1 or more" in capsys.readouterr().err


@pytest.mark.parametrize("rev", ["no-such-revision-here", "HEAD:README.md", "HEAD^{tree}"])
def test_only_a_commit_is_measured(rev, capsys):
    assert suite.main([rev]) == 2
    assert f"{rev!r} is no commit of this checkout" in capsys.readouterr().err
