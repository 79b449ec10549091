"""Where the loop puts its cache breakpoints (context.mark_breakpoints), judged by the API's
prompt-cache rule (tests/support/prompt_cache.py: an entry is found only within 20 blocks before a
breakpoint): each request reads what the one before it wrote, also after a wide turn of parallel
calls and, when it clears, up to where the clearing starts."""

import copy

from tests.agent.test_context import BigTools, CountingModel, logs
from tests.agent.test_loop_fakes import ListRecorder, good_report, policy, response, text, tool_use
from tests.support.prompt_cache import PromptCache, cache_blocks
from triage_agent import context
from triage_agent.loop import run_triage
from triage_agent.turns import Settings

KB = 1024
WIDE = 12   # parallel calls in one turn: 25 blocks (text, 12 tool_use, 12 tool_result)


def script(steps, *, wide_at):
    """One get_logs call a step, but WIDE of them at the steps in `wide_at`, then a report."""
    turns, n = [], 0
    for step in range(1, steps + 1):
        calls = []
        for _ in range(WIDE if step in wide_at else 1):
            n += 1
            calls.append(logs(f"toolu_{n}", n))
        turns.append(response("tool_use", text(f"step {step}"), *calls))
    report = tool_use("toolu_report", "write_report", good_report(tool_use_id="toolu_1"))
    return turns + [response("tool_use", report)]


def investigate(steps, *, wide_at, budget):
    turns = script(steps, wide_at=wide_at)
    model, recorder = CountingModel(*turns), ListRecorder()
    outcome = run_triage("checkout restarts", model=model, tools=BigTools(3 * KB),
                         recorder=recorder, settings=Settings(),
                         policy=policy(max_steps=len(turns) + 1, max_tool_calls=WIDE * steps,
                                       context_budget_tokens=budget))
    assert model.problems == [] and outcome.stop == "report"   # 4 breakpoints at most, too
    return outcome, model.requests


def bills(requests):
    cache = PromptCache()
    return [cache.read(request) for request in requests]


def newest_only(request):
    """The request with one breakpoint in the conversation, on the newest user turn (the
    placement before this one)."""
    request = copy.deepcopy(request)
    for message in request["messages"]:
        for block in message["content"]:
            block.pop("cache_control", None)
    request["messages"][-1]["content"][-1]["cache_control"] = dict(context.MARK)
    return request


def test_every_request_reads_all_the_one_before_it_sent_even_after_a_wide_turn():
    _, requests = investigate(8, wide_at={3, 6}, budget=0)
    for before, bill in zip(requests, bills(requests)[1:]):
        assert bill.read == bill.reusable == sum(len(data) for data, _ in cache_blocks(before))
    # with one breakpoint on the newest turn, the turn after a wide one finds nothing past the
    # system block within 20 blocks: everything the run had sent is written again
    after_wide = bills([newest_only(r) for r in requests])[3]
    fixed = len(requests[0]["tools"]) + len(requests[0]["system"])
    tools_and_system = sum(len(data) for data, _ in cache_blocks(requests[0])[:fixed])
    assert after_wide.read <= tools_and_system < after_wide.reusable


def test_the_request_that_clears_reads_up_to_where_the_clearing_starts():
    outcome, requests = investigate(24, wide_at={5}, budget=12_000)
    assert outcome.context["clearings"] >= 3
    fixed = len(requests[0]["tools"]) + len(requests[0]["system"])
    tools_and_system = sum(len(data) for data, _ in cache_blocks(requests[0])[:fixed])
    short = [(n, bill) for n, bill in enumerate(bills(requests)) if bill.read < bill.reusable]
    assert len(short) == outcome.context["clearings"]   # the others read all they could
    for n, bill in short[1:]:   # the first clearing starts at the first result: nothing to gain
        # all but the assistant turn between the last stub turn and the first result cleared
        # now (2 KB when it is the wide turn's 12 calls), and more than tools and system
        assert bill.reusable - bill.read < 3 * KB and bill.read > tools_and_system, (n, bill)
