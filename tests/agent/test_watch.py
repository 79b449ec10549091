"""The watch after an executed action (triage_agent/actions/watch.py, looks.py), on scripted
tool results and a clock that only moves when the watch sleeps: when it looks, what it calls
recovered, not_recovered and unknown, and the line it gives for each. The same watch on the
simulator through real kubectl is tests/agent/cli/test_watch.py's."""

import pytest

from triage_agent import actions
from triage_agent.actions import looks, watch
from triage_agent.mcp.client import McpError

OLD = "checkout-6f8d9c7b5d"
NEW = "checkout-5c4b8d7f9b"
CRASH_LINE = (f"{OLD}-x7k2p phase=Running ready=0/1 restarts=47 container=checkout "
              "state=waiting reason=CrashLoopBackOff message=\"back-off 5m0s\" "
              "last_state=terminated last_reason=Error last_exit_code=1 node=node-b age=4h")


class Time:
    """clock/sleep seams: time passes only in sleep, and every sleep is kept."""

    def __init__(self):
        self.now, self.sleeps = 0.0, []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds

    def settings(self, timeout=180, quiet=30):
        return watch.WatchSettings(timeout=timeout, quiet=quiet, clock=self.clock,
                                   sleep=self.sleep, wall=lambda: 1.8e9)


class Tools:
    """The tools seam: `answer(name, arguments, now)` -> text, or an exception to raise."""

    def __init__(self, time_, answer):
        self.time, self.answer, self.calls = time_, answer, []

    def call(self, name, arguments):
        self.calls.append((name, dict(arguments), self.time.now))
        found = self.answer(name, arguments, self.time.now)
        if isinstance(found, BaseException):
            raise found
        return found if isinstance(found, tuple) else (found, False)


def pod(name, state, restarts=0, age="5s"):
    states = {"ready": "phase=Running ready=1/1",
              "creating": "phase=Pending ready=0/1 container=checkout state=waiting "
                          "reason=ContainerCreating",
              "crash": "phase=Running ready=0/1 container=checkout state=waiting "
                       "reason=CrashLoopBackOff last_state=terminated last_reason=Error "
                       "last_exit_code=1",
              "pull": "phase=Pending ready=0/1 container=checkout state=waiting "
                      "reason=ImagePullBackOff message=\"Back-off pulling image\"",
              "unschedulable": "phase=Pending ready=0/1 condition=PodScheduled "
                               "reason=Unschedulable message=\"0/3 nodes are available: 3 "
                               "Insufficient memory.\""}
    return f"{name} {states[state]} restarts={restarts} node=node-a age={age}"


def workload(ready, pods, desired=2, updated=2, rs=NEW):
    lines = [f"workload Deployment prod/checkout", f"replicas desired={desired} "
             f"updated={updated} ready={ready} available={ready}",
             f"revision 3 ReplicaSet/{rs} images=x desired={desired} ready={ready} created=t",
             f"revision 2 ReplicaSet/{OLD} images=y desired=0 ready=0 created=t"]
    return "\n".join(lines + [f"pod {p}" for p in pods])


ROLLBACK = {"kind": "rollout_undo", "namespace": "prod", "target": "checkout",
            "seen": [f"{OLD}-x7k2p"]}


def rollback_answer(ready_at):
    def answer(name, arguments, now):
        assert (name, arguments) == ("describe_workload", {"namespace": "prod",
                                                           "kind": "Deployment",
                                                           "name": "checkout"})
        state = "ready" if now >= ready_at else "creating"
        return workload(2 if state == "ready" else 0,
                        [pod(f"{NEW}-aaaaa", state), pod(f"{NEW}-bbbbb", state)])
    return answer


def test_a_rollback_is_recovered_once_its_pods_stay_ready_for_the_quiet_period():
    t = Time()
    said = []
    found = watch.watch_action(ROLLBACK, Tools(t, rollback_answer(ready_at=5)),
                               t.settings(quiet=30), say=said.append)
    assert found.state == "recovered"
    assert found.observed == [f"2/2 pods of ReplicaSet {NEW} Ready",
                              "restarts unchanged for 30 s",
                              "1 pod(s) unhealthy before the action are gone"]
    assert t.sleeps[0] == watch.FIRST_LOOK                  # the first look after a few seconds
    assert all(gap >= watch.MIN_GAP for gap in t.sleeps)     # never closer than every 2 s
    assert found.waited_s == t.now and 35 <= t.now <= 45     # not long after the quiet period
    assert said[:2] == ["watching checkout: 0/2 Ready, 0 restarts",
                        "watching checkout: 2/2 Ready, 0 restarts"]   # said when it changes
    assert found.checked_at == "2027-01-15T08:00:00Z"


def test_the_looks_back_off():
    t = Time()
    found = watch.watch_action(ROLLBACK, Tools(t, rollback_answer(ready_at=10 ** 6)),
                               t.settings(timeout=120))
    assert t.sleeps[:5] == [2.0, 3.0, 4.5, 6.75, 10.125] and max(t.sleeps) == watch.MAX_GAP
    assert found.state == "not_recovered" and 118 <= t.now <= 120   # the whole window, no more
    assert all(gap >= watch.MIN_GAP for gap in t.sleeps)
    assert found.observed == [f"not recovered within 120 s: rollout of {NEW} incomplete: 0/2 "
                              "Ready (updated 2, available 0)"]


def test_quiet_zero_is_recovered_at_the_first_complete_look():
    t = Time()
    found = watch.watch_action(ROLLBACK, Tools(t, rollback_answer(ready_at=0)),
                               t.settings(quiet=0))
    assert (found.state, t.sleeps) == ("recovered", [2.0])
    assert "restarts unchanged" not in " ".join(found.observed)


@pytest.mark.parametrize("state,words", [("crash", "crashes"), ("pull", "fails to pull its image"),
                                         ("unschedulable", "cannot be scheduled")])
def test_a_new_pod_that_fails_ends_the_watch_at_once(state, words):
    t = Time()
    line = pod(f"{NEW}-aaaaa", state, restarts=1 if state == "crash" else 0)
    tools = Tools(t, lambda *_: workload(0, [line, pod(f"{NEW}-bbbbb", "creating")]))
    found = watch.watch_action(ROLLBACK, tools, t.settings())
    assert found.state == "not_recovered" and len(tools.calls) == 1
    assert found.observed == [f"new pod {NEW}-aaaaa {words}: pod {line}"]


def test_a_restart_count_that_rises_after_the_rollout_completed_is_a_crash():
    t = Time()

    def answer(name, arguments, now):
        restarts = 1 if now > 8 else 0
        return workload(2, [pod(f"{NEW}-aaaaa", "ready", restarts), pod(f"{NEW}-bbbbb", "ready")])
    found = watch.watch_action(ROLLBACK, Tools(t, answer), t.settings())
    assert found.state == "not_recovered" and "crashes" in found.observed[0]


def test_pods_seen_unhealthy_that_are_still_there_hold_recovery_back():
    t = Time()
    still = CRASH_LINE

    def answer(name, arguments, now):
        pods = [pod(f"{NEW}-aaaaa", "ready"), pod(f"{NEW}-bbbbb", "ready")]
        return workload(2, pods + ([still] if now < 20 else []))
    found = watch.watch_action(ROLLBACK, Tools(t, answer), t.settings(quiet=0))
    assert found.state == "recovered" and t.now >= 20


@pytest.mark.parametrize("failure,words", [
    (McpError("MCP server exited (code -9)"), "could not read describe_workload: McpError: MCP "
                                              "server exited (code -9)"),
    (("namespace 'prod' is not allowed by this server\nmore", True),
     "could not read describe_workload: namespace 'prod' is not allowed by this server"),
])
def test_a_look_that_cannot_read_is_unknown(failure, words):
    t = Time()
    found = watch.watch_action(ROLLBACK, Tools(t, lambda *_: failure), t.settings())
    assert (found.state, found.observed) == ("unknown", [words])


def test_a_reading_that_shows_no_deployment_is_unknown():
    t = Time()
    found = watch.watch_action(ROLLBACK, Tools(t, lambda *_: "something else"), t.settings())
    assert found.state == "unknown"


def test_an_interrupt_is_not_caught():
    t = Time()
    with pytest.raises(KeyboardInterrupt):
        watch.watch_action(ROLLBACK, Tools(t, lambda *_: KeyboardInterrupt()), t.settings())


DELETE = {"kind": "delete_pod", "namespace": "prod", "target": "web-5f6b7c8d9b-ngmcc",
          "seen": ["web-5f6b7c8d9b-ngmcc"]}


def pods_answer(replacement_state, *, appears_at=0):
    def answer(name, arguments, now):
        assert (name, arguments) == ("get_pods", {"namespace": "prod"})
        lines = ["pods in namespace prod: 3 total",
                 pod("web-5f6b7c8d9b-q7ns9", "ready", age="6d"),
                 pod("frontend-74b9c5d6f8-7wlqb", "ready", age="3s")]   # young, another owner
        if now >= appears_at:
            lines.append(pod("web-5f6b7c8d9b-zz9zz", replacement_state, age=f"{int(now)}s"))
        return "\n".join(lines)
    return answer


def test_a_deleted_pod_whose_replacement_is_ready_is_recovered():
    t = Time()
    found = watch.watch_action(DELETE, Tools(t, pods_answer("ready", appears_at=4)),
                               t.settings())
    assert found.state == "recovered"
    assert found.observed == ["replacement web-5f6b7c8d9b-zz9zz of web-5f6b7c8d9b Ready",
                              "web-5f6b7c8d9b-ngmcc is gone",
                              "1 pod(s) unhealthy before the action are gone"]


def test_pods_named_in_a_group_are_told_apart_from_the_deleted_one():
    # get_pods names healthy pods of one owner and one age as a group: OWNER-{a,b}
    t = Time()
    group = "web-5f6b7c8d9b: 2 pods age=2s nodes=node-a: web-5f6b7c8d9b-{ngmcc,zz9zz}"
    found = watch.watch_action(dict(DELETE, seen=[]), Tools(t, lambda *_: "pods in namespace prod: 2 total\n"
                                                          "healthy (Running, all containers ready, no restarts):\n"
                                                          + group), t.settings())
    assert found.state == "recovered"
    assert found.observed == ["replacement web-5f6b7c8d9b-zz9zz of web-5f6b7c8d9b Ready"]  # not "gone": it is listed


def test_a_replacement_that_cannot_be_scheduled_is_not_recovered_with_its_line():
    t = Time()
    found = watch.watch_action(DELETE, Tools(t, pods_answer("unschedulable")), t.settings())
    assert found.state == "not_recovered"
    assert found.observed[0].startswith("replacement web-5f6b7c8d9b-zz9zz cannot be scheduled: "
                                        "web-5f6b7c8d9b-zz9zz phase=Pending")
    assert "Insufficient memory" in found.observed[0]


def test_no_replacement_within_the_window_is_not_recovered():
    t = Time()
    found = watch.watch_action(DELETE, Tools(t, pods_answer("ready", appears_at=10 ** 6)),
                               t.settings(timeout=20))
    assert found.state == "not_recovered"
    assert "no replacement of web-5f6b7c8d9b-ngmcc" in found.observed[0]


def test_a_statefulset_pod_is_replaced_under_its_own_name():
    t = Time()
    action = {"kind": "delete_pod", "namespace": "prod", "target": "db-0", "seen": []}
    answers = iter([pod("db-0", "crash", restarts=9, age="2d"), pod("db-0", "ready", age="1s")])
    found = watch.watch_action(action, Tools(t, lambda *_: next(answers)), t.settings())
    assert (found.state, found.observed[0]) == ("recovered", "replacement db-0 of db Ready")


def test_the_pods_a_run_saw_unhealthy_are_its_targets_last_state():
    reads = [("get_pods", {"namespace": "prod"}, f"{CRASH_LINE}\n"
              + pod(f"{OLD}-m4q9z", "crash", restarts=45) + "\n"
              + pod("checkout-db-7f6d5c4b3a-abcde", "crash", restarts=3) + "\n"   # another app
              + pod("frontend-74b9c5d6f8-7wlqb", "crash", restarts=1)),
             ("describe_workload", {"namespace": "prod", "kind": "Deployment",
                                    "name": "checkout"},
              "pod " + pod(f"{OLD}-m4q9z", "ready")),                   # seen healthy later
             ("get_pods", {"namespace": "staging"}, pod(f"{OLD}-zzzzz", "crash")),
             ("get_logs", {"namespace": "prod"}, pod(f"{OLD}-yyyyy", "crash"))]
    assert looks.unhealthy_seen(reads, "rollout_undo", "prod", "checkout") == [f"{OLD}-x7k2p"]
    assert looks.unhealthy_seen(reads, "delete_pod", "prod", "frontend-74b9c5d6f8-d4t6m") == \
        ["frontend-74b9c5d6f8-7wlqb"]
    assert looks.seen_before({}, {}, {"kind": 1}) == []


def test_a_verification_goes_to_the_model_and_into_the_record():
    def verify(proposal):
        assert proposal.seen == ["checkout-6f8d9c7b5d-x7k2p"]
        return {"state": "not_recovered", "observed": ["new pod x crashes: x"],
                "checked_at": "t", "waited_s": 2.0}
    gate = make_gate(verify)
    text, is_error, proposal = gate.propose(dict(UNDO), seen=["checkout-6f8d9c7b5d-x7k2p"])
    assert proposal.decision == "executed" and not is_error
    assert "the target did NOT recover (not_recovered): new pod x crashes: x" in text
    assert proposal.to_dict()["verification"]["state"] == "not_recovered"


def test_a_failed_command_is_not_watched_and_a_broken_watch_is_unknown():
    gate = make_gate(lambda p: pytest.fail("watched a failed command"), code=1)
    assert gate.propose(dict(UNDO))[2].verification is None

    def broken(proposal):
        raise RuntimeError("oops")
    proposal = make_gate(broken).propose(dict(UNDO))[2]
    assert (proposal.decision, proposal.verification["state"]) == ("executed", "unknown")
    assert proposal.verification["observed"] == ["the watch failed (RuntimeError: oops)"]
    assert proposal.verification["checked_at"].endswith("Z")


def test_serve_watch_without_a_server_is_unknown_and_off_with_timeout_zero(tmp_path):
    from triage_agent.options import build_parser
    from triage_agent.serve import verify
    said = []

    def run_options(*extra):
        return build_parser().parse_args(["x", "--namespaces", "prod", *extra])
    record = {"id": "ap-0123456789abcdef", "kind": "rollout_undo", "namespace": "prod",
              "target": "checkout", "seen": []}
    check = verify.watcher(run_options("--mcp", str(tmp_path / "no-such-server")), said.append)
    found = check(record)
    assert found["state"] == "unknown"
    assert found["observed"][0].startswith("the MCP server did not start")
    assert said[-1].startswith("approval ap-0123456789abcdef: verification of rollout_undo "
                               "prod/checkout: unknown (could not tell)")
    assert verify.watcher(run_options("--verify-timeout", "0"), said.append) is None


def test_an_interrupt_during_the_watch_keeps_the_record_and_says_so():
    def interrupted(proposal):
        raise KeyboardInterrupt("interrupted by the operator")
    gate = make_gate(interrupted)
    with pytest.raises(KeyboardInterrupt, match="verification interrupted"):
        gate.propose(dict(UNDO))
    [proposal] = gate.proposals
    assert (proposal.decision, proposal.exit_code, proposal.verification) == ("executed", 0, None)


UNDO = {"kind": "rollout_undo", "namespace": "prod", "target": "checkout", "reason": "bad rev"}


def make_gate(verify, code=0):
    return actions.ActionGate(allowed_kinds=["rollout_undo"], execute=True,
                              approve=lambda p: (True, "ok"),
                              runner=lambda argv: (code, "rolled back", ""),
                              namespaces=["prod"], verify=verify)


def test_an_interrupted_watch_in_a_run_keeps_the_executed_action_and_stops_the_run():
    from tests.agent.test_loop_fakes import (FakeTools, ListRecorder, ScriptedModel, policy,
                                             response, tool_use)
    from triage_agent.loop import run_triage

    def interrupted(proposal):
        raise KeyboardInterrupt("interrupted by the operator")
    model = ScriptedModel(response("tool_use", tool_use("toolu_p", "propose_action", UNDO)))
    recorder = ListRecorder()
    outcome = run_triage("checkout restarts", model=model, tools=FakeTools(), policy=policy(),
                         gate=make_gate(interrupted), recorder=recorder)
    assert (outcome.stop, outcome.exit_code) == ("interrupted", 130)
    assert outcome.error == "verification interrupted (interrupted by the operator)"
    [proposal] = outcome.proposals
    assert (proposal["decision"], proposal["exit_code"], proposal["verification"]) == \
        ("executed", 0, None)
    assert outcome.to_dict()["actions_taken"]["executed"][0]["command"].startswith("kubectl")
    assert [a["decision"] for a in recorder.audits] == ["proposal_executed"]


def test_a_watched_action_in_a_run_is_audited_and_taken():
    from tests.agent.test_loop_fakes import (FakeTools, ListRecorder, ScriptedModel, policy,
                                             response, tool_use)
    from triage_agent.loop import run_triage
    found = {"state": "recovered", "observed": ["2/2 pods of ReplicaSet x Ready"],
             "checked_at": "2026-12-07T20:00:00Z", "waited_s": 4.1}
    model = ScriptedModel(response("tool_use", tool_use("toolu_p", "propose_action", UNDO)))
    recorder = ListRecorder()
    outcome = run_triage("checkout restarts", model=model, tools=FakeTools(), policy=policy(),
                         gate=make_gate(lambda p: found), recorder=recorder)
    assert outcome.to_dict()["actions_taken"]["executed"][0]["verification"] == found
    entry = recorder.audits[1]
    assert entry["decision"] == "verification" and entry["tool_use_id"] == "toolu_p"
    assert {k: entry[k] for k in found} == found


@pytest.mark.parametrize("flag,value,words", [("--verify-timeout", "-1", "must be at least 0"),
                                              ("--verify-timeout", "3601", "must be at most 3600"),
                                              ("--verify-quiet", "soon", "is not a number"),
                                              ("--verify-quiet", "nan", "must be at least 0")])
def test_the_watch_flags_refuse_what_is_not_a_number_of_seconds(capsys, flag, value, words):
    from triage_agent.options import build_parser
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args(["x", "--namespaces", "prod", flag, value])
    assert stopped.value.code == 2 and words in capsys.readouterr().err


def test_the_watch_flags_default_to_the_issue_s_numbers():
    from triage_agent.options import build_parser
    args = build_parser().parse_args(["x", "--namespaces", "prod"])
    assert (args.verify_timeout, args.verify_quiet) == (180.0, 30.0)


def test_a_rollout_with_more_pods_than_listed_completes_on_its_replicaset_s_count():
    t = Time()
    shown = [pod(f"{NEW}-{i:05d}", "ready") for i in range(30)]
    text = workload(40, shown, desired=40, updated=40)
    text += "\npod not shown: 10 more; use get_pods with a selector"
    found = watch.watch_action(ROLLBACK, Tools(t, lambda *_: text), t.settings(quiet=0))
    assert found.observed[0] == f"40/40 pods of ReplicaSet {NEW} Ready"
    cut = text.replace("ready=40 created", "ready=35 created")
    found = watch.watch_action(ROLLBACK, Tools(t, lambda *_: cut), t.settings(timeout=10))
    assert found.state == "not_recovered"


def test_get_pods_counted_lines_and_shared_states_are_read_as_pods():
    text = "\n".join([
        "pods in namespace prod: 7 total, 2 not healthy (listed first)",
        'api-6d4c9f8b7d-b3t6j phase=Pending ready=0/1 restarts=0 condition=PodScheduled '
        'reason=Unschedulable message="0/3 nodes are available" node=none age=50m',
        "api-6d4c9f8b7d-z5k8w phase=Pending ready=0/1 restarts=0 (state as above) node=none age=2s",
        "healthy (Running, all containers ready, no restarts):",
        "web-74b9c5d6f8: 3 pods ages=12s..6d nodes=node-a,node-b: web-74b9c5d6f8-7wlqb(6d) "
        "web-74b9c5d6f8-d4t6m(12s) web-74b9c5d6f8-lzbqm(6d)",
        "db-5f6b7c8d9b: 9 pods ages=40s..6d nodes=3",
        "cache-6c7d8e9f0a: 2 pods age=5m nodes=node-a: cache-6c7d8e9f0a-{q2w3e,r4t5y}"])
    pods = {p.name: p for p in looks.parse_pods(text)}
    assert looks.failure(pods["api-6d4c9f8b7d-z5k8w"]) == "cannot be scheduled"
    assert "0/3 nodes are available" in pods["api-6d4c9f8b7d-z5k8w"].line
    young = pods["web-74b9c5d6f8-d4t6m"]
    assert young.healthy and young.age == "12s" and young.group == "web-74b9c5d6f8"
    assert pods["web-74b9c5d6f8-7wlqb"].age == "6d"
    for name in ("cache-6c7d8e9f0a-q2w3e", "cache-6c7d8e9f0a-r4t5y"):   # a group of one age, named once
        assert pods[name].healthy and pods[name].age == "5m" and pods[name].group == "cache-6c7d8e9f0a"
    assert "cache-6c7d8e9f0a" not in pods
    counted = pods["db-5f6b7c8d9b"]   # too many to name: one pod stands for the youngest
    assert counted.healthy and counted.age == "40s" and counted.group == "db-5f6b7c8d9b"
