"""Endpoint profiles: what a request carries for the hosted API and for self-hosted servers.

    anthropic    the hosted Messages API (api.anthropic.com): the loop's request as it is
    compatible   llama.cpp's llama-server, Ollama, vLLM, the LiteLLM proxy at /v1/messages: they
                 ignore or drop fallbacks, output_config, strict, cache_control and the beta
                 header, join system text blocks with no separator, and lose `is_error` on a
                 tool_result. `compatible_request` sends only what they understand: no fallbacks,
                 no output_config, no strict, no cache_control, the system prompt as one text,
                 and every error result saying so in its own text ("ERROR: ...").

The default follows the model: `anthropic` for a Claude model id (claude-...) whatever the base
URL (a gateway forwarding to the hosted API loses nothing), `compatible` for any other model;
--api-profile or TRIAGE_API_PROFILE choose otherwise (providers.py). The loop builds one request whatever the endpoint; the client applies the profile on the
wire, so records and replays see the loop's request. `server_words` turns a self-hosted server's
error types into a sentence an operator can act on.
"""

import re
import urllib.parse

CLAUDE_ID = re.compile(r"claude-[a-z0-9]")
PROFILES = ("anthropic", "compatible")
HOSTED_HOSTS = ("api.anthropic.com",)
ERROR_PREFIX = "ERROR: "
# error types of self-hosted servers (llama-server's), in the operator's words, with what to do
SERVER_ERRORS = {
    "exceed_context_size_error": ("the prompt exceeds its context size",
                                  "start the server with a larger context (llama-server -c N, "
                                  "Ollama's num_ctx) or lower --context-budget-tokens"),
    "unavailable_error": ("the model is not ready (still loading)",
                          "wait for the server to finish loading the model, then run again"),
}


def is_hosted(base_url) -> bool:
    """True when `base_url` is the hosted Messages API."""
    try:
        host = urllib.parse.urlsplit(base_url or "").hostname or ""
    except ValueError:
        return False
    return host.lower().rstrip(".") in HOSTED_HOSTS


def default_profile(model) -> str:
    """`anthropic` for a Claude model id (claude-...) whatever the base URL: a gateway in front
    of the hosted API keeps caching, effort and fallbacks; `compatible` for any other model."""
    return "anthropic" if isinstance(model, str) and CLAUDE_ID.match(model) else "compatible"


def compatible_request(body: dict) -> dict:
    """The loop's request as a self-hosted server understands it (a copy; `body` is unchanged)."""
    out = {key: value for key, value in body.items()
           if key not in ("fallbacks", "output_config")}
    system = body.get("system")
    if isinstance(system, list):
        out["system"] = "\n\n".join(block.get("text", "") for block in system
                                    if isinstance(block, dict))
    if isinstance(body.get("tools"), list):
        out["tools"] = [_plain(tool, drop=("cache_control", "strict")) for tool in body["tools"]]
    if isinstance(body.get("messages"), list):
        out["messages"] = [_message(m) for m in body["messages"]]
    return out


def _plain(block, *, drop=("cache_control",)):
    return {k: v for k, v in block.items() if k not in drop} if isinstance(block, dict) else block


def _message(message):
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    return dict(message, content=[_said(_plain(block)) for block in message["content"]])


def _said(block):
    """A tool_result that is an error also says so in its text: is_error does not get through."""
    if not isinstance(block, dict) or block.get("type") != "tool_result" \
            or not block.get("is_error"):
        return block
    content = block.get("content")
    if isinstance(content, str):
        return dict(block, content=_prefixed(content))
    if isinstance(content, list) and content and isinstance(content[0], dict) \
            and content[0].get("type") == "text":
        first = _plain(content[0])
        first["text"] = _prefixed(str(first.get("text", "")))
        return dict(block, content=[first] + [_plain(b) for b in content[1:]])
    return dict(block, content=[{"type": "text", "text": ERROR_PREFIX.strip()}]
                + [_plain(b) for b in (content if isinstance(content, list) else [])])


def _prefixed(text):
    return text if text.startswith(ERROR_PREFIX.strip()) else ERROR_PREFIX + text


def server_words(error_type, message):
    """A self-hosted server's error in the operator's words, or None for a type it does not
    name: "the model server says the prompt exceeds its context size
    (exceed_context_size_error): <its message>; what to do: ..."."""
    known = SERVER_ERRORS.get(error_type)
    if known is None:
        return None
    said, advice = known
    return f"the model server says {said} ({error_type}): {message}; what to do: {advice}"
