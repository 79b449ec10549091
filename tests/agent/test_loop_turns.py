"""turns.py on its own (the wire side of a model turn), and the split that keeps loop.py small.

The loop's behaviour through these helpers is covered end to end in test_loop.py; here each
helper's edge is pinned where it lives, and a guard fails if loop.py grows back past the house
limits (STYLE.md: split before 400 lines, functions around 40)."""

import ast
from pathlib import Path

import pytest

from triage_agent import loop, prompts, turns

RO = {"readOnlyHint": True}
NAMESPACED = {"type": "object", "properties": {"namespace": {"type": "string"}}}
TOOLSET = prompts.build_toolset([{"name": "get_pods", "annotations": RO,
                                  "inputSchema": NAMESPACED}])


def user(text):
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def test_breakpoints_go_on_the_two_newest_user_turns_and_the_input_is_not_changed():
    said = {"role": "assistant", "content": [{"type": "text", "text": "a"}]}
    messages = [user("first"), said, user("second"), said, user("third"), said]
    body = turns.build_request(turns.Settings(fallbacks=False), TOOLSET, messages)
    marked = [i for i, m in enumerate(body["messages"]) if "cache_control" in m["content"][-1]]
    assert marked == [2, 4] and "fallbacks" not in body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in m["content"][-1] for m in messages)  # a copy was marked


@pytest.mark.parametrize("response,ok", [
    ({"content": []}, True),
    ({"content": [{"type": "tool_use", "id": "t", "name": "get_pods"}]}, True),
    ({"content": [{"type": "tool_use", "name": "get_pods"}]}, False),
    ({"content": [{"type": "tool_use", "id": 7, "name": "get_pods"}]}, False),
    ({"content": [{"text": "no type"}]}, False),
    ({"content": "text"}, False),
    ([], False),
])
def test_well_formed(response, ok):
    assert turns.well_formed(response) is ok


def test_unknown_stop_reason():
    assert turns.unknown_stop_reason({"stop_reason": "tool_use"}) is None
    assert "'banana'" in turns.unknown_stop_reason({"stop_reason": "banana"})


def test_spend_prices_by_the_answering_model_and_keeps_the_limit():
    spend = turns.Spend()
    assert spend.over_limit(0.001, "claude-opus-5-5") is None   # nothing spent, nothing known
    spend.add({"usage": {"input_tokens": 1000, "cache_read_input_tokens": 500,
                         "output_tokens": 10}}, "claude-opus-5-5")
    assert spend.last_input == 1500 and spend.usage.cost > 0
    assert spend.over_limit(None, "claude-opus-5-5") is None
    assert "would cross --max-cost-usd 0.001" in spend.over_limit(0.001, "claude-opus-5-5")
    spend.add({"model": "mystery-1", "usage": {"input_tokens": 1}}, "claude-opus-5-5")
    assert spend.unpriced == "mystery-1" and spend.usage.cost is None
    assert "cannot be kept" in spend.over_limit(100, "claude-opus-5-5")


def test_loop_stays_within_the_house_limits():
    for module in (loop, turns):
        source = Path(module.__file__).read_text()
        assert len(source.splitlines()) < 400, module.__name__
        long = [(node.name, node.end_lineno - node.lineno + 1)
                for node in ast.walk(ast.parse(source)) if isinstance(node, ast.FunctionDef)
                and node.end_lineno - node.lineno + 1 > 45]
        assert long == [], module.__name__


def test_tool_name_with_a_trailing_newline_is_mapped_for_the_api():
    from triage_agent import prompts
    toolset = prompts.build_toolset([{"name": "get_pods\n", "annotations": {"readOnlyHint": True},
                                      "inputSchema": NAMESPACED}])
    [api] = [n for n, e in toolset.by_api_name.items() if e["kind"] == "server"]
    assert prompts.API_NAME.fullmatch(api) and toolset.by_api_name[api]["name"] == "get_pods\n"
