"""The approvals store in-process: files in a temp outbox, an injected clock, a recording runner.
Each refusal changes nothing on disk and leaves no audit entry; a decision is taken once; two
concurrent approvals run the command once; an approval left executing becomes unknown at start."""

import hashlib
import json
import threading

import pytest

from triage_agent import actions
from triage_agent.serve import approvals, runs
from triage_agent.serve.approvals import DecisionError, Store

RUN = "r-20261201T120000-0a1b2c3d"
KUBECONFIG = "/tmp/kubeconfig-for-tests"


class Clock:
    def __init__(self, now=1_800_000_000.0):
        self.now = now

    def __call__(self):
        return self.now


class Runner:
    """Records every argv; blocks on `release` when asked to, so a run can overlap another."""

    def __init__(self, code=0, *, block=False):
        self.code, self.calls = code, []
        self.release, self.entered = threading.Event(), threading.Event()
        if not block:
            self.release.set()

    def __call__(self, argv):
        self.calls.append(argv)
        self.entered.set()
        self.release.wait(30)
        return self.code, "deployment.apps/checkout rolled back\n", ""


def proposal(target="checkout", kind="rollout_undo"):
    p = actions.Proposal(kind, "prod", target, "the new image crashes at start")
    p.argv = actions.build_argv(kind, "prod", target, kubeconfig=KUBECONFIG)
    return p


def hand_over(outbox, clock, *, ttl=900.0, target="checkout"):
    note = approvals.handoff(outbox / RUN, alert={"alerts": []}, ttl=ttl, clock=clock)(
        proposal(target))
    return note.split("approval ")[1].split(")")[0]


def audit(outbox):
    path = outbox / f"{RUN}.audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture
def box(tmp_path):
    clock = Clock()
    outbox = tmp_path / "outbox"
    outbox.mkdir()
    return outbox, clock


def store(outbox, clock, **options):
    check = approvals.command_check(kinds=("rollout_undo",), ceiling=("prod",), context=None,
                                    kubeconfig=KUBECONFIG)
    return Store(outbox, clock=clock, rebuild=check, **options)


def test_handoff_writes_one_pending_file_bound_to_the_argv_digest(box):
    outbox, clock = box
    approval_id = hand_over(outbox, clock)
    record = json.loads((outbox / f"{RUN}.approval.{approval_id}.json").read_text())
    argv = proposal().argv
    assert record["state"] == "pending" and record["run_id"] == RUN
    assert record["argv"] == argv and record["command"] == proposal().command
    assert record["argv_sha256"] == hashlib.sha256(json.dumps(argv).encode()).hexdigest()
    assert record["expires_at"] == approvals.iso(clock.now + 900)
    assert not list(outbox.glob(".*.tmp"))  # written through a temp file and a rename


def test_approval_without_execute_records_approved_not_run_and_the_command(box):
    outbox, clock = box
    approval_id, runner = hand_over(outbox, clock), Runner()
    changed = []
    s = store(outbox, clock, runner=runner, changed=changed.append)
    digest = s.get(approval_id)["argv_sha256"]
    record = s.decide(approval_id, decision="approve", digest=digest, operator="alice")
    assert record["state"] == "approved_not_run" and runner.calls == []
    assert proposal().command in record["note"]
    assert record["decided_by"] == "alice" and record["decided_at"] == approvals.iso(clock.now)
    [entry] = audit(outbox)
    assert (entry["operator"], entry["decision"], entry["argv_sha256"]) == (
        "alice", "approval_approved", digest)
    assert [c["state"] for c in changed] == ["approved_not_run"]


def test_a_decision_is_taken_once(box):
    outbox, clock = box
    approval_id = hand_over(outbox, clock)
    s = store(outbox, clock, execute=True, runner=Runner())
    digest = s.get(approval_id)["argv_sha256"]
    s.decide(approval_id, decision="deny", digest=digest, operator="alice")
    for decision in ("approve", "deny"):
        with pytest.raises(DecisionError) as err:
            s.decide(approval_id, decision=decision, digest=digest, operator="bob")
        assert err.value.status == 409 and "already decided: denied by alice" in str(err.value)
    assert s.get(approval_id)["state"] == "denied" and len(audit(outbox)) == 1


@pytest.mark.parametrize("decision, digest, status", [
    ("approve", "0" * 64, 409), ("approve", "", 400), (None, "x", 400), ("yes", "x", 400),
    ("approve", None, 400)])
def test_a_refused_decision_changes_nothing(box, decision, digest, status):
    outbox, clock = box
    approval_id, runner = hand_over(outbox, clock), Runner()
    s = store(outbox, clock, execute=True, runner=runner)
    with pytest.raises(DecisionError) as err:
        s.decide(approval_id, decision=decision, digest=digest, operator="alice")
    assert err.value.status == status
    assert s.get(approval_id)["state"] == "pending" and runner.calls == [] and audit(outbox) == []


@pytest.mark.parametrize("approval_id", ["ap-0000000000000000", "../../etc/passwd", "", "ap-*"])
def test_an_unknown_approval_is_404(box, approval_id):
    outbox, clock = box
    hand_over(outbox, clock)
    with pytest.raises(DecisionError) as err:
        store(outbox, clock).decide(approval_id, decision="approve", digest="x", operator="a")
    assert err.value.status == 404 and store(outbox, clock).get(approval_id) is None


def test_an_approval_expires_on_the_injected_clock_and_never_runs(box):
    outbox, clock = box
    approval_id, runner = hand_over(outbox, clock, ttl=60), Runner()
    s = store(outbox, clock, execute=True, runner=runner)
    digest = s.get(approval_id)["argv_sha256"]
    clock.now += 59.9
    assert s.get(approval_id)["state"] == "pending"
    clock.now += 0.1
    with pytest.raises(DecisionError) as err:
        s.decide(approval_id, decision="approve", digest=digest, operator="alice")
    assert err.value.status == 410 and runner.calls == []
    assert s.get(approval_id)["state"] == "expired" and s.counts["expired"] == 1
    assert [e["decision"] for e in audit(outbox)] == ["approval_expired"]


def test_execute_runs_the_stored_argv_once_and_records_code_and_redacted_output(box):
    outbox, clock = box
    approval_id = hand_over(outbox, clock)

    def runner(argv):
        runner.calls.append(argv)
        return 1, "", "error: token=sk-ant-api03-" + "A" * 40 + " rejected"
    runner.calls = []
    s = store(outbox, clock, execute=True, runner=runner)
    record = s.decide(approval_id, decision="approve", digest=s.get(approval_id)["argv_sha256"],
                      operator="alice")
    assert runner.calls == [proposal().argv]
    assert record["state"] == "failed" and record["exit_code"] == 1
    assert "sk-ant-api03-AAAA" not in record["output"] and "rejected" in record["output"]
    assert [e["decision"] for e in audit(outbox)] == ["approval_approved", "approval_failed"]


def test_two_concurrent_approvals_run_the_command_once(box):
    outbox, clock = box
    approval_id, runner = hand_over(outbox, clock), Runner(block=True)
    s = store(outbox, clock, execute=True, runner=runner)
    digest = s.get(approval_id)["argv_sha256"]
    results = []

    def approve(name):
        try:
            results.append(s.decide(approval_id, decision="approve", digest=digest,
                                    operator=name)["state"])
        except DecisionError as exc:
            results.append(exc.status)
    first = threading.Thread(target=approve, args=("alice",))
    first.start()
    assert runner.entered.wait(10)  # alice's kubectl is running now
    assert store(outbox, clock).get(approval_id)["state"] == "executing"  # on disk already
    approve("bob")  # a second serve thread (or process) sees executing: refused
    runner.release.set()
    first.join(10)
    assert sorted(map(str, results)) == ["409", "executed"] and len(runner.calls) == 1


def test_restart_turns_executing_into_unknown_and_keeps_pending_decidable(box):
    outbox, clock = box
    stuck, waiting = hand_over(outbox, clock), hand_over(outbox, clock, target="web")
    path = outbox / f"{RUN}.approval.{stuck}.json"
    record = json.loads(path.read_text())
    runs.write_atomically(path, dict(record, state="executing", decided_by="alice"))
    runner = Runner()
    s = store(outbox, clock, execute=True, runner=runner)  # a new serve on the same outbox
    assert [r["id"] for r in s.recover()] == [stuck]
    assert s.get(stuck)["state"] == "unknown" and "check the cluster" in s.get(stuck)["note"]
    with pytest.raises(DecisionError) as err:
        s.decide(stuck, decision="approve", digest=record["argv_sha256"], operator="bob")
    assert err.value.status == 409 and runner.calls == []
    digest = s.get(waiting)["argv_sha256"]
    assert s.decide(waiting, decision="approve", digest=digest, operator="bob")["state"] == \
        "executed"
    assert len(runner.calls) == 1


def test_a_decision_whose_audit_cannot_be_written_is_not_taken(box):
    outbox, clock = box
    approval_id, runner = hand_over(outbox, clock), Runner()
    (outbox / f"{RUN}.audit.jsonl").mkdir()  # the audit log cannot be opened for append
    s = store(outbox, clock, execute=True, runner=runner)
    with pytest.raises(DecisionError) as err:
        s.decide(approval_id, decision="approve", digest=s.get(approval_id)["argv_sha256"],
                 operator="alice")
    assert err.value.status == 500 and "nothing was decided" in str(err.value)
    assert s.get(approval_id)["state"] == "pending" and runner.calls == []


@pytest.mark.parametrize("change, problem", [
    ({"kind": "delete_pod"}, "not enabled"), ({"namespace": "kube-system"}, "outside"),
    ({"argv": ["kubectl", "delete", "namespace", "prod"]}, "not the command"),
    ({"run_id": "../../elsewhere"}, "no such approval"), ({"id": "ap-" + "f" * 16}, "no such")])
def test_a_tampered_approval_file_is_not_run(box, change, problem):
    outbox, clock = box
    approval_id, runner = hand_over(outbox, clock), Runner()
    path = outbox / f"{RUN}.approval.{approval_id}.json"
    record = dict(json.loads(path.read_text()), **change)
    record["argv_sha256"] = approvals.argv_sha256(record["argv"])  # a consistent forgery
    runs.write_atomically(path, record)
    s = store(outbox, clock, execute=True, runner=runner)
    with pytest.raises(DecisionError) as err:
        s.decide(approval_id, decision="approve", digest=record["argv_sha256"], operator="a")
    assert err.value.status in (404, 409) and problem in str(err.value) and runner.calls == []
    assert not (outbox.parent / "elsewhere.audit.jsonl").exists()


def test_the_sweep_expires_an_approval_nobody_looks_at(box):
    from triage_agent.serve import service
    outbox, clock = box
    approval_id = hand_over(outbox, clock, ttl=60)
    heard = threading.Event()
    s = store(outbox, clock, changed=lambda record: heard.set())
    clock.now += 61
    stop = threading.Event()
    sweeper = threading.Thread(target=service.sweep, args=(s, stop), kwargs={"every": 0.01})
    sweeper.start()
    try:
        assert heard.wait(10)  # expired, and the outcome writer was told
    finally:
        stop.set()
        sweeper.join(10)
    record = json.loads((outbox / f"{RUN}.approval.{approval_id}.json").read_text())
    assert record["state"] == "expired"
