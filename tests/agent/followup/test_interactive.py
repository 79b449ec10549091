"""--interactive on a real terminal: the CLI as a process with a pty for stdin and stderr (its
stdout on a pipe), the real MCP server, kubectl and kube_sim. Each `follow-up> ` prompt gets the
next thing the operator types; ^C during a follow-up ends that follow-up only, an empty line or
^D ends the prompt, and the exit code is the run's."""

import json
import os
import pty
import select
import sys
import threading
import time

from tests.agent.cli.test_cli import REPLAY, ROOT, clean_env, run_cli_here
from tests.agent.cli.test_gates import _wait
from tests.support.fake_messages_api import FakeMessagesApi

PROMPT = b"follow-up> "
SYMPTOM = "checkout pods in prod keep restarting"


def responses(name):
    return json.loads((REPLAY / f"{name}.json").read_text())["responses"]


def run_interactive(argv, actions, *, env=None, timeout=60, on_output=None):
    """(exit code, stdout, screen): `actions[i]` (bytes, or a callable given the master fd) is
    typed at the i-th prompt; `on_output(screen, master)` sees the screen as it grows."""
    out_r, out_w = os.pipe()
    pid, master = pty.fork()
    if pid == 0:
        os.dup2(out_w, 1)
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-m", "triage_agent", *argv],
                  {**clean_env(), **(env or {})})
    os.close(out_w)
    stdout = bytearray()
    reader = threading.Thread(target=lambda: [stdout.extend(c) for c in iter(
        lambda: os.read(out_r, 65536), b"")], daemon=True)
    reader.start()   # stdout is read as it comes: a full pipe must not hold the child up
    deadline, screen, prompts = time.monotonic() + timeout, b"", 0
    while time.monotonic() < deadline:
        if not select.select([master], [], [], deadline - time.monotonic())[0]:
            break
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        screen += chunk
        if on_output:
            on_output(screen, master)
        while screen.count(PROMPT) > prompts and prompts < len(actions):
            action = actions[prompts]
            prompts += 1
            action(master) if callable(action) else os.write(master, action)
    status = _wait(pid, deadline)
    reader.join(max(deadline - time.monotonic(), 1))   # to the end of the pipe
    os.close(master)
    os.close(out_r)
    return os.waitstatus_to_exitcode(status), stdout.decode(), screen.decode(errors="replace")


def test_questions_at_the_prompt_then_an_empty_line_ends(shared_sim, tmp_path):
    sim = shared_sim("crashloop")
    fixture, session = tmp_path / "both.json", tmp_path / "s.json"
    fixture.write_text(json.dumps({"description": "the run, then its follow-up", "responses":
                                   responses("crashloop") + responses("followup-other-replica")}))
    code, stdout, screen = run_interactive(
        [SYMPTOM, "--namespaces", "prod", "--replay", str(fixture), "--kubeconfig",
         sim.kubeconfig, "--session", str(session), "--interactive"],
        [b"what about the other replica?\n", b"\n"])
    assert code == 0, screen
    assert "SEVERITY: HIGH" in stdout and "ANSWER (follow-up 1)" in stdout
    assert screen.count("follow-up> ") == 2 and "[step 1/6] get_logs" in screen
    doc = json.loads(session.read_text())
    assert [(r["followup"], r["stop"]) for r in doc["runs"]] == [(0, "report"), (1, "answer")]


def test_ctrl_c_ends_the_follow_up_only_and_ctrl_d_the_prompt(shared_sim, tmp_path):
    sim, session = shared_sim("crashloop"), tmp_path / "s.json"
    arrived, release = threading.Event(), threading.Event()
    with FakeMessagesApi(responses("crashloop") + responses("followup-other-replica")) as fake:
        served = fake.handle

        def handle(handler):   # the follow-up's first request waits: ^C comes meanwhile
            if len(fake.requests) == 4:
                arrived.set()
                release.wait(30)
            return served(handler)
        fake.handle = handle

        def interrupt(master):
            os.write(master, b"what about the other replica?\n")
            threading.Thread(target=lambda: arrived.wait(30) and os.write(master, b"\x03"),
                             daemon=True).start()
        code, stdout, screen = run_interactive(
            [SYMPTOM, "--namespaces", "prod", "--base-url", fake.url, "--no-stream",
             "--kubeconfig", sim.kubeconfig, "--session", str(session), "--interactive"],
            [interrupt, b"\x04"], env={"ANTHROPIC_API_KEY": "sk-test"})
        release.set()
    assert code == 0, screen
    assert "SEVERITY: HIGH" in stdout and "ANSWER" not in stdout
    assert "follow-up 1 ended without an answer (stop: interrupted)" in screen
    assert screen.count("follow-up> ") == 2
    doc = json.loads(session.read_text())
    assert [(r["followup"], r["stop"]) for r in doc["runs"]] == [(0, "report"),
                                                                 (1, "interrupted")]


def test_interactive_needs_a_terminal(shared_sim):
    sim = shared_sim("crashloop")
    out = run_cli_here(SYMPTOM, "--namespaces", "prod", "--replay",
                       str(REPLAY / "crashloop.json"), "--kubeconfig", sim.kubeconfig,
                       "--interactive")
    assert out.returncode == 2 and "needs a terminal" in out.stderr
