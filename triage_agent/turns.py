"""One model turn as the Messages API sees it: the request the loop sends, the checks on the
response it gets back, the tool_result blocks it answers with, and what the turns cost.

    request  {model, max_tokens, output_config.effort, fallbacks?,
              system: [prompt + cache_control],            <- breakpoint 1: system and tools
              tools, messages: [..., newest user turn: last block + cache_control]}
                                                              <- breakpoint 2: the conversation
    response {content: [blocks with a string type; tool_use with string id and name],
              stop_reason: one of STOP_REASONS, usage: {input_tokens, output_tokens,
              cache_read_input_tokens, cache_creation_input_tokens, iterations?}, model}

`Spend` adds up each response's usage (priced by the model that answered) and says, before the
next call, whether --max-cost-usd would be crossed by it: the next request is at least as large
as the last one, so its input alone is the estimate.
"""

from dataclasses import dataclass

from triage_agent import prompts, records

STOP_REASONS = ("end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal",
                "model_context_window_exceeded")  # the API's whole list; anything else is broken


@dataclass
class Settings:
    """Model settings sent with every request."""
    model: str = "claude-opus-5-5"
    max_tokens: int = 16000
    effort: str = "medium"
    fallbacks: bool = True


def build_request(settings, toolset, messages):
    """The request body: cached system block, tools, a breakpoint on the newest user turn."""
    messages = list(messages)
    for i in range(len(messages) - 1, -1, -1):
        if messages[i]["role"] == "user":
            content = list(messages[i]["content"])
            content[-1] = dict(content[-1], cache_control={"type": "ephemeral"})
            messages[i] = dict(messages[i], content=content)
            break
    body = {"model": settings.model, "max_tokens": settings.max_tokens,
            "system": [{"type": "text", "text": prompts.SYSTEM_PROMPT,
                        "cache_control": {"type": "ephemeral"}}],
            "tools": toolset.api_tools, "messages": messages,
            "output_config": {"effort": settings.effort}}
    if settings.fallbacks:
        body["fallbacks"] = "default"
    return body


def well_formed(response):
    """True when the response has the shape the loop relies on (content blocks, tool_use ids)."""
    if not isinstance(response, dict) or not isinstance(response.get("content"), list):
        return False
    for block in response["content"]:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return False
        if block["type"] == "tool_use" and not (isinstance(block.get("id"), str)
                                                and isinstance(block.get("name"), str)):
            return False
    return True


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
    """A tool_result block answering one tool_use."""
    return {"type": "tool_result", "tool_use_id": tool_use_id,
            "content": [{"type": "text", "text": text}], "is_error": bool(is_error)}


class Spend:
    """Tokens and USD over a run; the --max-cost-usd check made before each model call."""

    def __init__(self):
        self.usage = records.Usage()
        self.unpriced = None   # the model of the first response the price table lacks
        self.last_input = 0    # the previous request's input size

    def add(self, response, default_model):
        """Add one response's usage, priced by the model that answered."""
        usage = response.get("usage") if isinstance(response.get("usage"), dict) else {}
        model = response.get("model") or default_model
        if self.usage.add(model, usage) is None and self.unpriced is None:
            self.unpriced = model
        self.last_input = sum(int(usage.get(k) or 0) for k in (
            "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))

    def over_limit(self, limit, model):
        """Why the next call to `model` must not be made under `limit` USD, or None."""
        if limit is not None and self.usage.cost is None:  # a limit it cannot keep
            return (f"--max-cost-usd {limit} cannot be kept: a response from "
                    f"{self.unpriced!r} could not be priced")
        if limit is None or not self.last_input:
            return None
        estimate = records.cost_usd(model, {"input_tokens": self.last_input})
        if estimate is not None and self.usage.cost + estimate > limit:
            return (f"the next model call (about ${estimate:.4f}) would cross --max-cost-usd "
                    f"{limit} (spent ${self.usage.cost:.4f})")
        return None
