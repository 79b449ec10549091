"""The real CLI with standard streams that fail: no line for people can end a run.

stderr a pipe the test closes before the run writes to it, stderr on /dev/full (every write
fails), stderr closed at start (`2>&-`): the run still ends with its report and --json still puts
exactly one object on stdout (and nothing else: a closed fd 2 must not turn progress lines into
stdout or audit-file lines). stdout a pipe whose reader is gone (`triage-agent ... | head -1`):
no traceback, no "Exception ignored" at shutdown, the outcome's exit code."""

import json
import os
import subprocess
import sys

import pytest

from tests.agent.cli.test_cli import ROOT, jsonl, replay_args

# exec the CLI in the same process after closing fd 2, the way a shell does for `2>&-`
CLOSE_FD2 = ("import os, sys; os.close(2); "
             "os.execv(sys.executable, [sys.executable, '-m', 'triage_agent', *sys.argv[1:]])")


def environ():
    return {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}


def start(argv, **streams):
    return subprocess.Popen(argv, cwd=ROOT, env=environ(), stdin=subprocess.DEVNULL, **streams)


def cli_argv(*args):
    return [sys.executable, "-m", "triage_agent", *args]


def test_stderr_closed_by_its_reader(kube_sim):
    proc = start(cli_argv(*replay_args(kube_sim("crashloop"), "crashloop", "--json")),
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stderr.close()  # every write to stderr from here on is a broken pipe
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and json.loads(stdout)["stop"] == "report"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_stderr_that_fails_every_write(kube_sim):
    with open("/dev/full", "w") as full:
        proc = start(cli_argv(*replay_args(kube_sim("crashloop"), "crashloop", "--json")),
                     stdout=subprocess.PIPE, stderr=full)
        stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and json.loads(stdout)["stop"] == "report"


def test_stderr_closed_at_start(kube_sim, tmp_path):
    audit = tmp_path / "audit.jsonl"
    proc = start([sys.executable, "-c", CLOSE_FD2,
                  *replay_args(kube_sim("crashloop"), "crashloop", "--json", "--audit-log",
                               str(audit))], stdout=subprocess.PIPE)
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert json.loads(stdout)["stop"] == "report"   # the whole of stdout is one JSON object
    decisions = [e["decision"] for e in jsonl(audit)]   # JSON lines only, no human lines
    assert decisions[-1] == "report_accepted"
    assert set(decisions) == {"preflight", "executed", "report_accepted"}


@pytest.mark.parametrize("extra", [[], ["--json"]], ids=["text", "json"])
def test_stdout_reader_gone_ends_quietly(kube_sim, extra):
    proc = start(cli_argv(*replay_args(kube_sim("crashloop"), "crashloop", *extra)),
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # like `| head -1` having read its line and gone
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    assert "cost: claude-opus-5-5" in stderr   # the lines for people still come


def test_stdout_reader_gone_on_a_run_without_report(kube_sim):
    proc = start(cli_argv(*replay_args(kube_sim("crashloop"), "refusal", "--json")),
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3 and "stop: refusal" in stderr and "Traceback" not in stderr

