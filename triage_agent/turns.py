"""One model turn as the Messages API sees it: the request the loop sends, the checks on the
response it gets back, the tool_result blocks it answers with, and what the turns cost.

    request  {model, max_tokens, output_config.effort, fallbacks?,
              system: [prompt + cache_control],            <- breakpoint 1: system and tools
              tools, messages: [..., newest user turn: last block + cache_control]}
                                  <- up to 3 more in the conversation (context.mark_breakpoints)
    response {content: [blocks with a string type; tool_use with string id and name],
              stop_reason: one of STOP_REASONS, usage: {input_tokens, output_tokens,
              cache_read_input_tokens, cache_creation_input_tokens, iterations?}, model}

The loop owns the conversation it sends back, and the API answers some of what a model may
return with 400 when it is sent back (an empty or blank text block; a tool_use id used twice or
not of the form [a-zA-Z0-9_-]+; a tool_use input that is not an object; an empty assistant turn
before the last message; a final assistant turn ending in whitespace). `repair_content` makes
the stored copy of a turn sendable and lists each change for the trace; a response whose shape
the loop cannot send back unchanged (a thinking block without its signature) or whose usage is
not token counts is not used at all: `well_formed` and `usage_problem` end the run first. A
self-hosted server may send no stop_reason: `fill_stop_reason` reads the turn as tool_use when it
calls a tool, else end_turn; any other value outside STOP_REASONS ends the run.

`Spend` adds up each response's usage (priced by the model that answered, with the operator's
prices beside the table) and says, before the next call, whether --max-cost-usd would be crossed
by it: the next request is at least as large as the last one, so its input alone is the estimate.
"""

import json
import re
from dataclasses import dataclass

from triage_agent import context, prompts
from triage_agent.telemetry import records

STOP_REASONS = ("end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal",
                "model_context_window_exceeded")  # the API's whole list; anything else is broken
TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")  # the API's pattern for an id it is sent back
# the fields each block type the loop sends back must carry as strings; other types (server-tool
# blocks for tools this loop never offers, unknown ones) are dropped from the stored turn
SENT_BACK = {"text": ("text",), "thinking": ("thinking", "signature"),
             "redacted_thinking": ("data",), "tool_use": ("id", "name")}
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                "cache_read_input_tokens")
NO_TEXT = "(the tool returned no text)"


@dataclass
class Settings:
    """Model settings sent with every request."""
    model: str = "claude-opus-5-5"
    max_tokens: int = 16000
    effort: str = "medium"
    fallbacks: bool = True
    prices: object = None  # the operator's prices (telemetry/prices.PriceTable), or None


def build_request(settings, toolset, messages, *, anchors=()):
    """The request body: cached system block, tools, the conversation's breakpoints (`anchors`:
    see context.mark_breakpoints)."""
    body = {"model": settings.model, "max_tokens": settings.max_tokens,
            "system": [{"type": "text", "text": prompts.SYSTEM_PROMPT,
                        "cache_control": dict(context.MARK)}],
            "tools": toolset.api_tools, "messages": context.mark_breakpoints(messages, anchors),
            "output_config": {"effort": settings.effort}}
    if settings.fallbacks:
        body["fallbacks"] = "default"
    return body


def well_formed(response):
    """True when the response has the shape the loop relies on and can send back: a content list
    of blocks with a string type, and the string fields of each block type it keeps."""
    if not isinstance(response, dict) or not isinstance(response.get("content"), list):
        return False
    for block in response["content"]:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return False
        if not all(isinstance(block.get(f), str) for f in SENT_BACK.get(block["type"], ())):
            return False
    return True


def usage_problem(response):
    """Why the response's usage cannot be accounted for (not token counts), or None. A missing
    usage or a null count is zero, as the API sends null for cache fields it does not use."""
    usage = response.get("usage")
    if usage is None:
        return None
    iterations = usage.get("iterations") if isinstance(usage, dict) else None
    if not isinstance(usage, dict) or not isinstance(iterations, (list, type(None))):
        return f"usage is {usage!r:.80}, not an object of token counts"
    for where, entry in [("usage", usage)] + [(f"usage.iterations[{i}]", e)
                                               for i, e in enumerate(iterations or [])]:
        if not isinstance(entry, dict):
            return f"{where} is {entry!r:.80}, not an object of token counts"
        for key in TOKEN_FIELDS:
            value = entry.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                return f"{where}.{key} is {value!r:.40}, not a token count"
    return None


def repair_content(content, used_ids, *, step):
    """(blocks to store, tool_use blocks to dispatch, notes) for a well-formed response's content.

    Dropped: blank text blocks and block types the loop never asked for. A tool_use whose id was
    already used (`used_ids`, updated here) or is not of the API's form gets a fresh id, in the
    stored turn and the dispatched call alike, so its tool_result answers the id the model sees;
    an input that is not a JSON object is stored as {} but dispatched as sent, so the refusal
    names what the model sent. A dispatched call that was changed carries `repaired`, its note.
    """
    kept, uses, notes = [], [], []
    for index, block in enumerate(content):
        kind = block["type"]
        if kind not in SENT_BACK or (kind == "text" and not block["text"].strip()):
            what = "a blank text" if kind == "text" else f"a {kind!r:.40}"
            notes.append(f"content[{index}]: {what} block was dropped (it cannot be sent back)")
            continue
        if kind == "tool_use":
            block, use = _repair_tool_use(block, used_ids, step, index)
            uses.append(use)
            if "repaired" in use:
                notes.append(f"content[{index}] tool_use: {use['repaired']}")
        kept.append(block)
    if not kept:
        notes.append("the turn has nothing to send back and is not stored (the API rejects an "
                     "empty assistant turn before the last message)")
    return kept, uses, notes


def _repair_tool_use(block, used_ids, step, index):
    stored, fixes = dict(block), []
    if block["id"] in used_ids or not TOOL_USE_ID.fullmatch(block["id"]):
        stored["id"] = fresh = _fresh_id(used_ids, step, index)
        why = "was already used" if block["id"] in used_ids else "is not of the API's form"
        fixes.append(f"id {block['id']!r:.60} {why}; renamed {fresh!r}")
    used_ids.add(stored["id"])
    if not _json_object(block.get("input")):
        stored["input"] = {}
        fixes.append(f"input {block.get('input')!r:.60} is not a JSON object; sent back as {{}}")
    use = dict(block, id=stored["id"])
    if fixes:
        use["repaired"] = "; ".join(fixes)
    return stored, use


def _fresh_id(used_ids, step, index):
    candidate, n = f"toolu_loop_{step}_{index}", 0
    while candidate in used_ids:
        n += 1
        candidate = f"toolu_loop_{step}_{index}_{n}"
    return candidate


def _json_object(value):
    if not isinstance(value, dict):
        return False
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return True


def trim_final(content):
    """(content, note): a turn sent back as the final assistant message may not end in
    whitespace, so its last text block is trimmed (dropped when nothing is left)."""
    if not content or content[-1]["type"] != "text":
        return content, None
    text = content[-1]["text"]
    if text == text.rstrip():
        return content, None
    trimmed = [dict(content[-1], text=text.rstrip())] if text.strip() else []
    return content[:-1] + trimmed, "the paused turn's trailing whitespace was trimmed"


def fill_stop_reason(response):
    """(response, note): a self-hosted server may leave stop_reason out (or null); the turn then
    reads as what its content says, tool_use when it calls a tool and end_turn otherwise."""
    if response.get("stop_reason") is not None:
        return response, None
    calls = any(block.get("type") == "tool_use" for block in response["content"])
    reason = "tool_use" if calls else "end_turn"
    return dict(response, stop_reason=reason), f"no stop_reason in the response; read as {reason}"


def unknown_stop_reason(response):
    """The error for a stop_reason the API does not define, or None."""
    if response.get("stop_reason") in STOP_REASONS:
        return None
    return (f"the model API answered with stop_reason {response.get('stop_reason')!r}, which "
            "it does not define; the turn was not acted on")


def api_error_text(exc):
    """An ApiError as one line for people, request-id included (no `None` when no HTTP
    response arrived: that is said in words)."""
    where = f"HTTP {exc.status}" if exc.status is not None else "no HTTP response"
    return (f"model API error ({where}) {exc.error_type}: {exc.message or 'no message'} "
            f"(request-id: {exc.request_id or 'none'})")


def tool_result(tool_use_id, text, is_error):
    """A tool_result block answering one tool_use (never with a blank text block: the API
    rejects one)."""
    return {"type": "tool_result", "tool_use_id": tool_use_id,
            "content": [{"type": "text", "text": text if text.strip() else NO_TEXT}],
            "is_error": bool(is_error)}


def step_usage(response):
    """One response's tokens by kind (zeros where the API sent none)."""
    usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
    return {"input": usage.get("input_tokens") or 0,
            "cache_write": usage.get("cache_creation_input_tokens") or 0,
            "cache_read": usage.get("cache_read_input_tokens") or 0,
            "output": usage.get("output_tokens") or 0}


class Spend:
    """Tokens and USD over a run; the --max-cost-usd check made before each model call."""

    def __init__(self, prices=None):
        self.prices = prices   # the operator's (records.PriceTable), beside the built-in table
        self.usage = records.Usage()
        self.unpriced = None   # the model of the first response the price table lacks
        self.last_input = 0    # the previous request's input size

    def add(self, response, default_model):
        """Add one response's usage, priced by the model that answered."""
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        model = response.get("model") or default_model
        if self.usage.add(model, usage, self.prices) is None and self.unpriced is None:
            self.unpriced = model
        self.last_input = sum(usage.get(k) or 0 for k in (  # usage_problem checked them
            "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))

    def over_limit(self, limit, model):
        """Why the next call to `model` must not be made under `limit` USD, or None."""
        if limit is not None and self.usage.cost is None:  # a limit it cannot keep
            return (f"--max-cost-usd {limit} cannot be kept: a response from "
                    f"{self.unpriced!r} could not be priced")
        if limit is None or not self.last_input:
            return None
        estimate = records.cost_usd(model, {"input_tokens": self.last_input}, self.prices)
        if estimate is not None and self.usage.cost + estimate > limit:
            return (f"the next model call (about ${estimate:.4f}) would cross --max-cost-usd "
                    f"{limit} (spent ${self.usage.cost:.4f})")
        return None
