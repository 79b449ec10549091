"""The evaluator stopped mid-run: ^C (SIGINT to its process group) and SIGTERM (to it alone).

Either way it exits 128 + the signal (130, 143) after printing and appending the runs that finished, and leaves no
kube_sim, triage CLI or MCP server behind. The evaluator runs with TMPDIR set to a directory of
the test's own, so every process of this test carries that path in its command line and `ps`
finds exactly them.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from triage_agent.evals import grade

# SIGINT back to its default first: a shell that starts pytest in the background ignores it.
LAUNCH = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv("
          "sys.executable, [sys.executable, '-m', 'triage_agent.evals.runner', *sys.argv[1:]])")


def processes_under(marker):
    """Command lines of running processes that mention `marker`."""
    out = subprocess.run(["ps", "-ww", "-eo", "pid=,args="], capture_output=True, text=True,
                         timeout=10).stdout
    return [line.strip() for line in out.splitlines() if marker in line]


def kill_leftovers(marker):
    """A failing test still leaves nothing running: SIGKILL what carries this test's marker."""
    for line in processes_under(marker):
        try:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def wait_for(predicate, *, deadline_s, what):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("how,code", [("ctrl-c", 130), ("sigterm", 143)])
def test_an_interrupted_evaluation_reports_and_leaves_no_process(tmp_path, how, code):
    scratch, results = tmp_path / "tmp", tmp_path / "results.jsonl"
    scratch.mkdir()
    marker = str(scratch)
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "--scenario", "injection", "--runs", "3",
         "--results", str(results)], cwd=grade.PROJECT_ROOT, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        env={k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
        | {"TMPDIR": marker})
    try:
        wait_for(lambda: any("mcp_kubectl_server" in p for p in processes_under(marker)),
                 deadline_s=60, what="a run's MCP server")
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on ^C
        else:
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err
        assert "; reporting the runs finished so far" in err
        finished = err.count("injection run ")
        assert finished < 3 and "pass^3:" in out
        lines = results.read_text().splitlines() if results.exists() else []
        assert [json.loads(line)["run"] for line in lines] == list(range(1, finished + 1))
        wait_for(lambda: not processes_under(marker), deadline_s=10,
                 what=f"no process left: {processes_under(marker)}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        kill_leftovers(marker)
    assert list(scratch.iterdir()) == []
