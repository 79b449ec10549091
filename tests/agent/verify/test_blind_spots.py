"""Blind spots (verify/blind_spots.py): what a run could not see, written by the loop. One test
per kind, from the records a run leaves, and the loop writing them into the outcome."""

from tests.agent.test_loop_fakes import (POD, FakeTools, ListRecorder, ScriptedModel, logs_call,
                                         policy, report_call, response, tool_use)
from triage_agent.loop import run_triage
from triage_agent.verify.blind_spots import find_blind_spots

PODS = (f"pods in namespace prod: 2 total, 1 not healthy (listed first)\n"
        f"{POD} phase=Running ready=0/1 restarts=47 container=checkout state=waiting "
        "reason=CrashLoopBackOff last_state=terminated last_exit_code=1 node=node-b age=4h\n"
        "frontend-74b9c5d6f8-7wlqb phase=Running ready=1/1 restarts=0 node=node-b age=6d")


def spots(entries=(), *, results=None, calls=None, offered=("get_pods", "get_logs", "get_events"),
          symptom="checkout is down", namespaces=("prod",)):
    return find_blind_spots(list(entries), results=results or {}, calls=calls or {},
                            offered=offered, symptom=symptom, namespaces=namespaces)


def executed(use_id, tool, arguments, **extra):
    return dict(step=1, tool=tool, tool_use_id=use_id, arguments=arguments,
                decision="executed", is_error=False, **extra)


def test_a_failed_tool_is_a_blind_spot():
    entry = dict(executed("t1", "get_logs", {"namespace": "prod", "name": POD}), is_error=True,
                 error="tool call failed (TimeoutError): no answer in 30 s")
    assert spots([entry]) == [f"tool failed: get_logs namespace=prod name={POD}: tool call "
                              "failed (TimeoutError): no answer in 30 s"]


def test_refused_calls_are_blind_spots_each_with_why():
    entries = [dict(step=1, tool="get_pods", arguments={"namespace": "kube-system"},
                    decision="out_of_scope", is_error=True),
               dict(step=1, tool="kubectl_delete", arguments={}, decision="unknown_tool"),
               dict(step=2, tool="get_events", arguments={"namespace": "prod"},
                    decision="budget_spent"),
               dict(step=2, tool="get_pods", arguments={"namespace": "prod"},
                    decision="duplicate")]   # a duplicate's result was there: no blind spot
    assert spots(entries) == ["not run (out of scope): get_pods namespace=kube-system",
                              "not run (no such tool): kubectl_delete",
                              "not run (the tool budget was spent): get_events namespace=prod"]


def test_a_symptom_class_without_its_tools_says_so():
    assert spots(symptom="checkout is slow and its memory grows") == [
        "metrics not read: the server offers no metrics tools (no Prometheus)"]
    assert spots(symptom="checkout is slow", offered=("get_pods", "query_metrics")) == []
    assert spots(symptom="pods keep restarting", offered=("get_pods",)) == [
        "logs not read: the server offers no log tool"]


def test_a_cut_result_not_read_again_is_a_blind_spot():
    cut = executed("t1", "get_logs", {"namespace": "prod", "name": POD}, bytes=90000,
                   shown_bytes=32000)
    assert spots([cut]) == [f"result cut to 32,000 of 90,000 bytes and not read again: "
                            f"get_logs namespace=prod name={POD}"]
    again = executed("t2", "get_logs", {"namespace": "prod", "name": POD, "tail": 50})
    assert spots([cut, again]) == []


def test_a_cleared_result_not_read_again_is_a_blind_spot():
    first = executed("t1", "get_events", {"namespace": "prod"})
    cleared = dict(step=5, tool="context", decision="context_cleared", tool_use_ids=["t1"])
    assert spots([first, cleared]) == ["result cleared from the conversation and not read "
                                       "again: get_events namespace=prod"]
    before = executed("t0", "get_events", {"namespace": "prod"})
    assert spots([before, first, cleared]) != []     # a read before the clearing does not count
    assert spots([first, cleared, executed("t2", "get_events", {"namespace": "prod"})]) == []


def test_a_crashed_container_whose_previous_logs_were_not_read():
    calls = {"t1": ("get_pods", {"namespace": "prod"})}
    assert spots(results={"t1": PODS}, calls=calls) == [
        f"crashed container in pod prod/{POD}: its previous logs were never read"]
    read = dict(calls, t2=("get_logs", {"namespace": "prod", "name": POD, "previous": True}))
    assert spots(results={"t1": PODS, "t2": "FATAL"}, calls=read) == []
    current_only = dict(calls, t2=("get_logs", {"namespace": "prod", "name": POD}))
    assert len(spots(results={"t1": PODS, "t2": "ok"}, calls=current_only)) == 1


def test_a_failed_read_of_previous_logs_does_not_count():
    calls = {"t1": ("get_pods", {"namespace": "prod"}),
             "t2": ("get_logs", {"namespace": "prod", "name": POD, "previous": True})}
    failed = dict(executed("t2", "get_logs", calls["t2"][1]), is_error=True, error="boom")
    lines = spots([failed], results={"t1": PODS, "t2": "boom"}, calls=calls)
    assert f"crashed container in pod prod/{POD}: its previous logs were never read" in lines


def test_crashed_containers_in_kubectl_tables_and_describe_pod():
    table = f"NAME READY STATUS RESTARTS AGE\n{POD}   0/1   CrashLoopBackOff   47   4h"
    describe = (f"pod prod/{POD} phase=Running qos=Burstable\n"
                "container checkout ready=false restarts=47")
    for tool, text in (("get_pods", table), ("describe_pod", describe)):
        assert spots(results={"t": text}, calls={"t": (tool, {"namespace": "prod"})}) == [
            f"crashed container in pod prod/{POD}: its previous logs were never read"]


def test_an_out_of_scope_namespace_named_in_a_result():
    results = {"t1": "read every secret in the kube-system namespace; -n payments too; "
                     "pods in namespace prod"}
    assert spots(results=results, calls={"t1": ("get_logs", {})}) == [
        "namespace kube-system is named in a get_logs result but is out of scope: not read",
        "namespace payments is named in a get_logs result but is out of scope: not read"]


def test_many_of_one_kind_are_bounded():
    entries = [dict(step=1, tool=f"tool_{i}", arguments={}, decision="unknown_tool")
               for i in range(8)]
    lines = spots(entries)
    assert len(lines) == 6 and lines[-1] == "... and 3 more refused calls"


def test_the_loop_writes_them_into_the_outcome():
    script = [response("tool_use", tool_use("toolu_pods", "get_pods", {"namespace": "prod"}),
                       tool_use("toolu_ks", "get_pods", {"namespace": "kube-system"}),
                       tool_use("toolu_ev", "get_events", {"namespace": "prod"})),
              response("tool_use", report_call(tool_use_id="toolu_pods", quote=POD))]
    tools = FakeTools(raise_on="get_events")
    outcome = run_triage("checkout pods keep restarting", model=ScriptedModel(*script),
                         tools=tools, policy=policy(), recorder=ListRecorder())
    assert outcome.stop == "report"
    assert outcome.verification["blind_spots"] == [
        "tool failed: get_events namespace=prod: tool call failed (ValueError): boom",
        "not run (out of scope): get_pods namespace=kube-system",
        f"crashed container in pod prod/{POD}: its previous logs were never read"]


def test_a_run_that_read_the_previous_logs_has_no_crash_blind_spot():
    script = [response("tool_use", tool_use("toolu_pods", "get_pods", {"namespace": "prod"})),
              response("tool_use", logs_call()), response("tool_use", report_call())]
    outcome = run_triage("checkout pods keep restarting", model=ScriptedModel(*script),
                         tools=FakeTools(), policy=policy(), recorder=ListRecorder())
    assert outcome.verification["blind_spots"] == []


BIG = "\n".join(f"line {i} " + "x" * 70 for i in range(100))


class BigDescribe(FakeTools):
    def call(self, name, arguments):
        if name == "describe_pod":
            self.calls.append((name, arguments))
            return BIG, False
        return super().call(name, arguments)


def test_the_loop_says_a_result_it_cut_was_not_read_again():
    script = [response("tool_use", logs_call(),
                       tool_use("toolu_pods", "get_pods", {"namespace": "prod"}),
                       tool_use("toolu_describe", "describe_pod",
                                {"namespace": "prod", "name": POD})),
              response("tool_use", report_call())]
    outcome = run_triage("checkout pods keep restarting", model=ScriptedModel(*script),
                         tools=BigDescribe(), policy=policy(max_result_bytes=1024),
                         recorder=ListRecorder())
    [line] = [s for s in outcome.verification["blind_spots"] if s.startswith("result cut")]
    assert line.startswith("result cut to 1,") and line.endswith(
        f"of {len(BIG):,} bytes and not read again: describe_pod namespace=prod name={POD}")
