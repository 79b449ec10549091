"""The result cap and the clearing of old results (triage_agent/context.py), alone and in the loop:
a scripted model that checks every request against the API's conversation rules, big fake results."""

import json
import random

import pytest

from tests.agent.test_loop_fakes import (FATAL, POD, ListRecorder, ScriptedModel, FakeTools,
                                         good_report, policy, response, text, tool_use)
from triage_agent import context
from triage_agent.loop import run_triage
from triage_agent.turns import Settings

KB = 1024


# --- the cap -------------------------------------------------------------------------------

def test_a_result_under_the_cap_is_untouched():
    capped = context.cap_result("a\nb\n", 10)
    assert (capped.text, capped.full_bytes, capped.cut) == ("a\nb\n", 4, False)


def test_five_megabytes_are_cut_at_a_line_boundary_with_what_was_left_out():
    lines = [f"line {i:07d} " + "x" * 90 for i in range(50_000)]
    big = "\n".join(lines)
    capped = context.cap_result(big, 32768, hint="call it again narrowed with tail")
    body, note = capped.text.rsplit("\n[result cut: ", 1)
    assert capped.cut and capped.full_bytes == len(big.encode())
    assert len(body.encode()) <= 32768 and big.startswith(body)
    assert body.split("\n")[-1] in lines              # the last line kept is whole
    left = len(big.encode()) - len(body.encode())
    assert note.startswith(f"{left:,} of {len(big.encode()):,} bytes")
    assert "call it again narrowed with tail" in note and len(capped.text.encode()) < 33000


def test_a_single_megabyte_line_is_cut_inside_the_line():
    line = "é" * (512 * KB)   # two bytes a character: the cut may not halve one
    capped = context.cap_result(line, 32768)
    body = capped.text.split("\n[result cut:")[0]
    assert capped.cut and 32766 <= len(body.encode()) <= 32768 and set(body) == {"é"}


def test_binary_looking_text_stays_valid_text():
    noise = random.Random(7).randbytes(200 * KB).decode("latin-1")
    capped = context.cap_result(noise, 8192)
    capped.text.encode("utf-8")            # no lone surrogates, nothing that cannot be sent
    assert capped.cut and capped.full_bytes == len(noise.encode("utf-8"))
    assert len(capped.text.split("\n[result cut:")[0].encode()) <= 8192


def test_the_hint_names_the_arguments_that_narrow_a_call():
    schema = {"properties": {"namespace": {}, "name": {}, "tail": {}, "container": {}}}
    assert context.narrowing_hint(schema) == "call it again narrowed with name, container, tail"
    assert "a name, a selector" in context.narrowing_hint({"properties": {"namespace": {}}})


@pytest.mark.parametrize("model, budget", [("claude-opus-5-5", 80_000),
                                           ("claude-haiku-4-5-20251001", 80_000),
                                           ("llama-3.1-8b", context.UNKNOWN_MODEL_BUDGET),
                                           (None, context.UNKNOWN_MODEL_BUDGET)])
def test_the_default_budget_is_a_share_of_the_window(model, budget):
    assert context.default_budget(model) == budget


# --- in the loop ---------------------------------------------------------------------------

class BigTools(FakeTools):
    """get_logs returns `size` bytes of numbered lines (the FATAL line first)."""

    def __init__(self, size):
        super().__init__()
        self.size = size

    def call(self, name, arguments):
        self.calls.append((name, arguments))
        tag = json.dumps(arguments, sort_keys=True)
        body = "\n".join(f"{tag} line {i} " + "y" * 60 for i in range(self.size // 80))
        return f"{FATAL}\n{body}", False


def logs(tid, n):
    return tool_use(tid, "get_logs", {"namespace": "prod", "name": POD, "tail": n})


def investigation(steps, *, report_quotes="toolu_1"):
    script = [response("tool_use", text(f"step {i}"), logs(f"toolu_{i}", i))
              for i in range(1, steps + 1)]
    script.append(response("tool_use", tool_use("toolu_report", "write_report",
                                                good_report(tool_use_id=report_quotes))))
    return script


class CountingModel(ScriptedModel):
    """Scripted, with usage that counts the request as an API would: 3.5 bytes a token."""

    def __call__(self, request):
        answer = super().__call__(request)
        answer["usage"] = {"input_tokens": int(len(json.dumps(request).encode()) / 3.5),
                           "output_tokens": 20}
        return answer


def run(script, tools, **budgets):
    model, recorder = CountingModel(*script), ListRecorder()
    outcome = run_triage("checkout restarts", model=model, tools=tools, recorder=recorder,
                         policy=policy(max_steps=len(script) + 1, max_tool_calls=len(script),
                                       **budgets), settings=Settings())
    assert model.problems == []   # every request kept the API's conversation rules
    return outcome, model, recorder


def sizes(model):
    return [len(json.dumps(r).encode()) for r in model.requests]


def test_long_run_clears_old_results_in_batches_and_its_quote_still_verifies():
    outcome, model, recorder = run(investigation(12), BigTools(6 * KB),
                                   context_budget_tokens=25_000)
    assert outcome.stop == "report" and outcome.grounding_warnings == []   # toolu_1 was cleared
    cleared = [a for a in recorder.audits if a.get("decision") == "context_cleared"]
    assert 1 <= len(cleared) <= 4, cleared   # batches, not one result every step
    assert all(c["results"] >= 2 and c["tokens_after"] <= 25_000 * context.CLEAR_TO for c in cleared)
    events = [t for t in recorder.traces if t.get("event") == "context_cleared"]
    assert [e["results"] for e in events] == [c["results"] for c in cleared]
    assert outcome.context["cleared_results"] == sum(c["results"] for c in cleared)
    assert outcome.context["saved_bytes"] > 0 and outcome.context["clearings"] == len(cleared)
    final = model.requests[-1]["messages"]
    stubs = [b for m in final if m["role"] == "user" for b in m["content"]
             if b.get("type") == "tool_result" and b["content"][0]["text"].startswith(context.CLEARED)]
    assert stubs and "get_logs namespace=prod" in stubs[0]["content"][0]["text"]
    # the audit names the results each batch cleared (verify/blind_spots.py reads them)
    assert sorted(i for c in cleared for i in c["tool_use_ids"]) == sorted(
        b["tool_use_id"] for b in stubs)
    newest = [m for m in final if m["role"] == "user"][-2:]   # the last two rounds stay whole
    assert all(not b["content"][0]["text"].startswith(context.CLEARED)
               for m in newest for b in m["content"] if b.get("type") == "tool_result")


def test_no_request_goes_over_the_budget_once_calibrated():
    outcome, model, _ = run(investigation(14), BigTools(8 * KB), context_budget_tokens=30_000)
    per_token = [s / u["input"] for s, u in zip(sizes(model), outcome.usage_by_step) if u["input"]]
    assert outcome.stop == "report" and len(outcome.usage_by_step) == 15
    # the fake usage counts every request the same way, so the estimate is exact after one step
    assert max(sizes(model)[1:]) / per_token[0] <= 30_000 * 1.02


def test_without_a_budget_nothing_is_cleared_and_requests_grow():
    outcome, model, recorder = run(investigation(8), BigTools(6 * KB), context_budget_tokens=0)
    assert outcome.context["clearings"] == 0 and sizes(model) == sorted(sizes(model))
    assert not [a for a in recorder.audits if a.get("decision") == "context_cleared"]


def test_a_repeat_of_a_cleared_call_runs_again():
    script = investigation(7)[:-1] + [response("tool_use", logs("toolu_again", 1)),
                                      response("tool_use", logs("toolu_dup", 7))]
    tools = BigTools(6 * KB)
    outcome, model, recorder = run(script, tools, context_budget_tokens=12_000)
    decisions = [(a["tool_use_id"], a["decision"]) for a in recorder.audits if "tool_use_id" in a]
    assert ("toolu_again", "executed") in decisions      # toolu_1's call, cleared, runs again
    assert ("toolu_dup", "duplicate") in decisions       # a call still in view stays a duplicate
    assert len(tools.calls) == 8


def test_a_cut_result_is_audited_at_its_full_size():
    script = [response("tool_use", logs("toolu_1", 1)),
              response("tool_use", tool_use("toolu_report", "write_report", good_report("toolu_1")))]
    outcome, model, recorder = run(script, BigTools(200 * KB), max_result_bytes=16 * KB)
    entry = next(a for a in recorder.audits if a.get("tool_use_id") == "toolu_1")
    assert entry["bytes"] > 200_000 and entry["shown_bytes"] < 16 * KB + 300
    sent = model.requests[1]["messages"][-1]["content"][0]["content"][0]["text"]
    assert "[result cut:" in sent and "call it again narrowed with name, container, tail" in sent
    assert outcome.context["cut_results"] == 1 and outcome.context["largest_result"]["bytes"] > 200_000
