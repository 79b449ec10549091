"""propose_action: validation before the gates, every gate combination, failures as values,
approval on a real pseudo-terminal, run_command's timeout and missing binaries."""

import itertools
import json
import os
import select
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from triage_agent.actions import (ACTION_KINDS, PROPOSE_ACTION_TOOL, ActionGate, Proposal,
                                  build_argv, run_command)
from triage_agent.actions.prompt import FAIL_CLOSED, approval_prompt, tty_approve
from triage_agent.schema import strict_tool_schema, validate
from triage_agent.terminal import printable

ROOT = Path(__file__).resolve().parents[2]
POD = "checkout-6f8d9c7b5d-x7k2p"
DELETE = {"kind": "delete_pod", "namespace": "prod", "target": POD,
          "reason": "the pod is stuck in CrashLoopBackOff"}


class Recorder:
    """An approve callback and a runner that record what reached them."""

    def __init__(self, *, approve=True, note="ok", code=0):
        self.asked, self.ran = [], []
        self.answer, self.note, self.code = approve, note, code

    def approve(self, proposal):
        self.asked.append(list(proposal.argv))
        return self.answer, self.note

    def runner(self, argv):
        self.ran.append(list(argv))
        return self.code, "pod \"x\" deleted\n", ""


def make_gate(rec, *, kinds=ACTION_KINDS, execute=True, **options):
    return ActionGate(allowed_kinds=kinds, execute=execute, approve=rec.approve,
                      runner=rec.runner, namespaces=["prod", "staging"], **options)


GATES = list(itertools.product([False, True], repeat=3))  # (enabled, approved, execute)


@pytest.mark.parametrize("enabled,approved,execute", GATES)
def test_gate_matrix_with_a_recording_runner(enabled, approved, execute):
    rec = Recorder(approve=approved, note="" if approved else "wrong pod")
    gate = make_gate(rec, kinds=["delete_pod"] if enabled else [], execute=execute)
    text, is_error, proposal = gate.propose(dict(DELETE))
    command = f"kubectl delete pod {POD} -n prod"
    assert rec.asked == ([command.split()] if enabled else [])
    assert rec.ran == ([command.split()] if enabled and approved and execute else [])
    expected = ("refused" if not enabled else "denied" if not approved
                else "executed" if execute else "approved_not_executed")
    assert proposal.decision == expected
    assert proposal.gates == {"enabled": enabled, "approved": approved if enabled else None,
                              "executed": enabled and approved and execute}
    assert is_error is (expected in ("refused", "denied"))
    if expected == "refused":
        assert "not enabled for this run; put it in proposed_actions" in text
    elif expected == "denied":
        assert "wrong pod" in text and "Do not propose" in text and "Nothing was run" in text
    elif expected == "approved_not_executed":
        assert "NOT executed" in text and command in text
    else:
        assert "exit code 0" in text and command in text


HOSTILE = [
    {**DELETE, "target": "-n"},
    {**DELETE, "target": "--all"},
    {**DELETE, "target": "--all-namespaces=true"},
    {**DELETE, "target": "a;b"},
    {**DELETE, "target": "a b"},
    {**DELETE, "target": "$(rm -rf /)"},
    {**DELETE, "target": "../x"},
    {**DELETE, "target": "x/../../y"},
    {**DELETE, "target": "Checkout"},
    {**DELETE, "target": "a" * 300},
    {**DELETE, "target": ""},
    {**DELETE, "target": "pod\n--all"},
    {**DELETE, "target": "x-"},
    {**DELETE, "namespace": "kube-system"},
    {**DELETE, "namespace": "-A"},
    {**DELETE, "namespace": "prod --all-namespaces"},
    {**DELETE, "namespace": "Prod"},
    {**DELETE, "kind": "delete_namespace"},
    {**DELETE, "kind": "exec"},
    {**DELETE, "reason": ""},
    {**DELETE, "reason": "x" * 5000},
    {**DELETE, "extra": "--force"},
    {"kind": "delete_pod", "namespace": "prod"},
    {"kind": "delete_pod", "namespace": "prod", "target": 7, "reason": "r"},
    {"kind": ["delete_pod"], "namespace": "prod", "target": POD, "reason": "r"},
    {},
    None,
    "delete_pod prod x",
    [DELETE],
]


@pytest.mark.parametrize("arguments", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_arguments_never_reach_the_operator_or_the_runner(arguments):
    rec = Recorder()
    text, is_error, proposal = make_gate(rec).propose(arguments)
    assert (rec.asked, rec.ran) == ([], [])
    assert is_error and proposal.decision == "invalid" and proposal.argv == []
    assert text.startswith("propose_action rejected:") and "Nothing was run" in text


def test_out_of_scope_namespace_names_the_scope():
    text, _, _ = make_gate(Recorder()).propose({**DELETE, "namespace": "kube-system"})
    assert "outside this run's scope (prod, staging)" in text


def test_a_denied_action_is_not_put_to_the_operator_again():
    rec = Recorder(approve=False, note="wrong pod")
    gate = make_gate(rec)
    assert gate.propose(dict(DELETE))[2].decision == "denied"
    text, is_error, proposal = gate.propose(dict(DELETE, reason="really, it is broken"))
    assert proposal.decision == "repeat_denied" and is_error
    assert "already denied" in text and "Do not propose it again" in text
    assert len(rec.asked) == 1
    other = gate.propose(dict(DELETE, target="checkout-6f8d9c7b5d-q9w4z"))[2]
    assert other.decision == "denied" and len(rec.asked) == 2  # a different target is asked
    assert rec.ran == []
    assert [p.decision for p in gate.proposals] == ["denied", "repeat_denied", "denied"]


@pytest.mark.parametrize("audit_ok", [lambda: False, lambda: 1 / 0, lambda: "yes"])
def test_no_action_is_put_forward_once_the_audit_log_is_unavailable(audit_ok):
    rec = Recorder()
    text, is_error, proposal = make_gate(rec, audit_ok=audit_ok).propose(dict(DELETE))
    assert proposal.decision == "audit_unavailable" and is_error
    assert (rec.asked, rec.ran) == ([], [])
    assert "audit log" in text and "Nothing was run" in text


def raising(*_):
    raise RuntimeError("terminal exploded")


@pytest.mark.parametrize("answer", [raising, lambda p: ("yes", "ok"), lambda p: 1,
                                    lambda p: None, lambda p: (1, "ok"), lambda p: (True,)])
def test_approve_that_raises_or_answers_oddly_fails_closed(answer):
    rec = Recorder()
    gate = ActionGate(allowed_kinds=["delete_pod"], execute=True, approve=answer,
                      runner=rec.runner, namespaces=["prod"])
    text, is_error, proposal = gate.propose(dict(DELETE))
    assert proposal.decision == "denied" and is_error and rec.ran == []
    assert "Nothing was run" in text


def test_a_deferred_proposal_waits_for_an_operator_and_is_not_handed_over_twice():
    rec, handed = Recorder(), []
    gate = make_gate(rec, defer=lambda p: handed.append(list(p.argv)) or "waiting (ap-1)")
    text, is_error, proposal = gate.propose(dict(DELETE))
    assert proposal.decision == "pending_approval" and not is_error
    assert "has NOT run" in text and "waiting (ap-1)" in text and "write_report" in text
    assert proposal.gates["approved"] is None and not proposal.gates["executed"]
    text, is_error, again = gate.propose(dict(DELETE, reason="still broken"))
    assert again.decision == "repeat_pending" and "already waits" in text
    assert handed == [proposal.argv] and (rec.asked, rec.ran) == ([], [])  # nobody asked here


def test_a_defer_that_raises_fails_closed():
    rec = Recorder()
    text, is_error, proposal = make_gate(rec, defer=raising).propose(dict(DELETE))
    assert proposal.decision == "denied" and is_error and "terminal exploded" in proposal.note
    assert "Nothing was run" in text and (rec.asked, rec.ran) == ([], [])


def test_runner_that_raises_becomes_failed():
    gate = ActionGate(allowed_kinds=["delete_pod"], execute=True,
                      approve=lambda p: (True, ""), runner=raising, namespaces=["prod"])
    text, is_error, proposal = gate.propose(dict(DELETE))
    assert proposal.decision == "failed" and is_error and proposal.exit_code is None
    assert "could not be run" in text and "RuntimeError" in text


def test_nonzero_exit_is_failed_with_code_and_trimmed_output():
    gate = ActionGate(allowed_kinds=["delete_pod"], execute=True, approve=lambda p: (True, ""),
                      runner=lambda argv: (1, "", "Error from server (NotFound)\n" + "x" * 9000),
                      namespaces=["prod"])
    text, is_error, proposal = gate.propose(dict(DELETE))
    assert proposal.decision == "failed" and is_error and proposal.exit_code == 1
    assert "exit code 1" in text and "NotFound" in text and "characters omitted" in text
    assert len(text) < 3000


def test_argv_for_each_kind_with_context_and_kubeconfig():
    assert build_argv("rollout_restart", "prod", "checkout") == \
        ["kubectl", "rollout", "restart", "deployment/checkout", "-n", "prod"]
    assert build_argv("rollout_undo", "prod", "checkout", context="kind-dev") == \
        ["kubectl", "rollout", "undo", "deployment/checkout", "-n", "prod", "--context",
         "kind-dev"]
    assert build_argv("delete_pod", "prod", POD, kubectl="/opt/kubectl", kubeconfig="k.yaml") == \
        ["/opt/kubectl", "--kubeconfig", "k.yaml", "delete", "pod", POD, "-n", "prod"]


def test_unknown_allowed_kind_is_a_configuration_error():
    with pytest.raises(ValueError, match="delete_namespace"):
        ActionGate(allowed_kinds=["delete_namespace"], execute=False, approve=raising,
                   runner=raising, namespaces=["prod"])


def test_a_bare_string_scope_is_a_configuration_error():
    with pytest.raises(TypeError):  # "prod" would otherwise mean {"p", "r", "o", "d"}
        ActionGate(allowed_kinds=[], execute=False, approve=raising, runner=raising,
                   namespaces="prod")


def test_tool_definition_and_its_strict_copy():
    schema = PROPOSE_ACTION_TOOL["input_schema"]
    assert PROPOSE_ACTION_TOOL["name"] == "propose_action"
    assert "log line" in PROPOSE_ACTION_TOOL["description"]
    assert validate(dict(DELETE), schema) == []
    assert validate({**DELETE, "target": "--all"}, schema)
    strict = json.dumps(strict_tool_schema(schema))
    assert "pattern" not in json.loads(strict)["properties"]["target"]


def test_printable_escapes_terminal_control_sequences():
    proposal = Proposal("delete_pod", "prod", POD, "fine\x1b[2J\rcommand: kubectl get pods",
                        argv=["kubectl", "delete", "pod", POD])
    prompt = approval_prompt(proposal)
    assert "\x1b" not in prompt and "\r" not in prompt and "\\x1b[2J\\r" in prompt
    assert printable("a\u202eb\nc") == "a\\u202eb\nc"


# --- the operator's terminal ------------------------------------------------------------------

CHILD = """
import fcntl, json, os, sys, termios
fd = int(sys.argv[1])
fcntl.ioctl(fd, termios.TIOCSCTTY, 0)  # the pty becomes this session's controlling terminal
from triage_agent.actions import Proposal
from triage_agent.actions.prompt import tty_approve
p = Proposal("delete_pod", "prod", "checkout-6f8d9c7b5d-x7k2p", "stuck in CrashLoopBackOff",
             argv=["kubectl", "delete", "pod", "checkout-6f8d9c7b5d-x7k2p", "-n", "prod"])
print(json.dumps(tty_approve(p)))
"""


def read_until(fd, marker, *, deadline=10.0):
    data, end = b"", time.monotonic() + deadline
    while marker not in data:
        left = end - time.monotonic()
        assert left > 0, f"terminal never showed {marker!r}: {data!r}"
        if select.select([fd], [], [], left)[0]:
            try:
                data += os.read(fd, 4096)
            except OSError as exc:  # EIO: nothing holds the terminal's other side any more
                raise AssertionError(f"terminal closed before {marker!r}: {data!r}") from exc
    return data.decode("utf-8", "replace")


@pytest.mark.parametrize("typed,expected", [
    (b"yes\n", [True, "approved by the operator"]),
    (b"  Y \n", [True, "approved by the operator"]),
    (b"no, wrong pod\n", [False, "no, wrong pod"]),
    (b"yes please\n", [False, "yes please"]),
    (b"\n", [False, ""]),
    (b"\x04", [False, FAIL_CLOSED]),  # ^D: end of input on the terminal
])
def test_tty_approve_on_a_real_pseudo_terminal_with_stdout_piped(typed, expected):
    master, slave = os.openpty()
    try:
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(slave)], cwd=ROOT,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, pass_fds=(slave,),
                                 start_new_session=True)
        os.close(slave)
        screen = read_until(master, b"anything else denies")
        os.write(master, typed)
        out, err = child.communicate(timeout=20)
    finally:
        os.close(master)
    assert child.returncode == 0, err
    assert json.loads(out) == expected
    assert f"command:   kubectl delete pod {POD} -n prod" in screen
    assert "reason:    stuck in CrashLoopBackOff" in screen
    assert b"approval needed" not in out  # the prompt went to the terminal, not to stdout


def test_keys_typed_before_the_prompt_do_not_answer_it():
    master, slave = os.openpty()
    try:
        os.write(master, b"yes\n")  # type-ahead, already waiting in the terminal's input queue
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(slave)], cwd=ROOT,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, pass_fds=(slave,),
                                 start_new_session=True)
        os.close(slave)
        read_until(master, b"anything else denies")
        os.write(master, b"no\n")
        out, err = child.communicate(timeout=20)
    finally:
        os.close(master)
    assert json.loads(out) == [False, "no"], err


def test_tty_approve_without_a_controlling_terminal_fails_closed():
    code = ("import json; from triage_agent.actions import Proposal\n"
            "from triage_agent.actions.prompt import tty_approve\n"
            "print(json.dumps(tty_approve(Proposal('delete_pod', 'prod', 'x', 'r'))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, start_new_session=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [False, FAIL_CLOSED]


def test_tty_approve_times_out_closed():
    master, slave = os.openpty()  # a terminal nobody answers
    try:
        result = tty_approve(Proposal("delete_pod", "prod", "x", "r"),
                             tty_path=os.ttyname(slave), timeout=0.2)
        shown = read_until(master, b"anything else denies")
    finally:
        os.close(master)
        os.close(slave)
    assert result == (False, FAIL_CLOSED) and "target:    x" in shown


# --- run_command ------------------------------------------------------------------------------

def test_run_command_reports_a_missing_binary_as_127():
    assert run_command(["/nonexistent/kubectl", "version"])[0] == 127
    assert run_command([])[0] == 126


def test_run_command_returns_output_and_code():
    assert run_command([sys.executable, "-c", "import sys; print('out'); "
                        "print('err', file=sys.stderr); sys.exit(3)"]) == (3, "out\n", "err\n")


def _gone_within(pid, seconds):
    """True once `pid` has exited (or is a zombie), waiting on its pidfd: no polling."""
    import select
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], seconds)[0]) or _dead(pid)
    finally:
        os.close(fd)


def _dead(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z"


def test_run_command_timeout_kills_the_whole_process_group():
    script = "sleep 60 & echo started $!; wait"
    code, out, err = run_command(["sh", "-c", script], timeout=0.3)
    assert code == 124 and "timed out after 0.3 s" in err
    grandchild = int(out.split()[1])  # partial output is kept
    assert _gone_within(grandchild, 10), "the background sleep survived the timeout"


# --- the real cluster path: kubectl against kube_sim ------------------------------------------

def writes(sim):
    return [(e["verb"], e["path"]) for e in sim.journal_entries()
            if e["verb"] not in ("GET", "LIST", "WATCH")]


needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")


@needs_kubectl
@pytest.mark.parametrize("enabled,approved,execute", GATES)
def test_gate_matrix_against_the_simulator(kube_sim, shared_sim, enabled, approved, execute):
    # only the case that runs the delete writes: the others read the module's simulator
    sim = kube_sim("crashloop") if enabled and approved and execute else shared_sim("crashloop")
    gate = ActionGate(allowed_kinds=["delete_pod"] if enabled else [], execute=execute,
                      approve=lambda p: (approved, "" if approved else "no"),
                      runner=run_command, namespaces=["prod"], context="kube-sim",
                      kubeconfig=sim.kubeconfig)
    pod = first_pod(sim)
    _, _, proposal = gate.propose(dict(DELETE, target=pod))
    if enabled and approved and execute:
        assert proposal.decision == "executed", proposal
        assert any(verb == "DELETE" and path.endswith(f"/namespaces/prod/pods/{pod}")
                   for verb, path in writes(sim))
        still_there = run_command(["kubectl", "--kubeconfig", sim.kubeconfig, "get", "pod", pod,
                                   "-n", "prod", "-o", "name"])
        assert still_there[0] != 0 and "NotFound" in still_there[2]
    else:   # the gate ran nothing: no kubectl to ask, the simulator is asked directly
        assert writes(sim) == [] and sim_get(sim, f"/api/v1/namespaces/prod/pods/{pod}")


def deployment_template(sim):
    code, out, err = run_command(["kubectl", "--kubeconfig", sim.kubeconfig, "get",
                                  "deployment", "checkout", "-n", "prod", "-o", "json"])
    assert code == 0, err
    return json.loads(out)["spec"]["template"]


@needs_kubectl
@pytest.mark.parametrize("kind,verb,resource", [
    ("rollout_restart", "PATCH", "deployments/checkout"),
    ("rollout_undo", "PATCH", "deployments/checkout"),
])
def test_rollouts_with_all_three_gates_really_change_the_deployment(kube_sim, kind, verb,
                                                                     resource):
    sim = kube_sim("crashloop")
    gate = ActionGate(allowed_kinds=[kind], execute=True, approve=lambda p: (True, ""),
                      runner=run_command, namespaces=["prod"], context="kube-sim",
                      kubeconfig=sim.kubeconfig)
    before = deployment_template(sim)
    text, is_error, proposal = gate.propose({"kind": kind, "namespace": "prod",
                                             "target": "checkout", "reason": "recover"})
    assert proposal.decision == "executed" and not is_error, text
    assert (verb, f"/apis/apps/v1/namespaces/prod/{resource}") in writes(sim)
    after = deployment_template(sim)
    if kind == "rollout_restart":
        assert "kubectl.kubernetes.io/restartedAt" in after["metadata"].get("annotations", {})
        assert after["spec"] == before["spec"]
    else:  # back to the revision that still had PAYMENT_API_URL
        env = {e["name"] for e in after["spec"]["containers"][0].get("env", [])}
        assert "PAYMENT_API_URL" in env and after["spec"] != before["spec"]


def sim_get(sim, path):
    """One GET of the simulator's API (the state a test checks, not what kubectl makes of it)."""
    with urllib.request.urlopen(sim.url + path, timeout=10) as response:
        return json.load(response)


def first_pod(sim):
    pods = sim_get(sim, "/api/v1/namespaces/prod/pods?labelSelector=app%3Dcheckout")["items"]
    return pods[0]["metadata"]["name"]   # the first kubectl would list
