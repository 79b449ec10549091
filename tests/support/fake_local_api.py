"""Fakes of self-hosted servers' /v1/messages: llama.cpp's llama-server and Ollama, on the wire as
their source code documents it (not as the hosted API does it).

`FakeLocalApi(script, server="llama"|"ollama")` serves `POST /v1/messages` on 127.0.0.1:0. What
both do to a request, kept per request in `.requests` (headers, body, raw) and `.seen` (what
the model is shown):

    system text blocks        joined with no separator (a string passes as it is)
    tool_result is_error      dropped: the model sees the result's text only
    fallbacks, output_config, strict, cache_control, anthropic-beta, tool_choice (Ollama)
                              ignored; each one sent is listed in the request's `ignored`
    auth                      none, or with `token=` Authorization: Bearer TOKEN (401 else)

Their answers to a script item (an Anthropic-shaped response body, as the replay fixtures hold):

    usage        llama: input_tokens, cache_read_input_tokens, output_tokens (no cache writes);
                 ollama: input_tokens and output_tokens only
    stop_sequence  llama: null; ollama: absent. An item's `"stop_reason": None` leaves it out.
    streamed     no pings; message_start (usage without output tokens) only once the first
                 token is ready (`first_byte_delay` seconds of prompt reading);
                 llama: a tool_use starts without `input`, every content_block_stop comes at
                 the end, then message_delta (usage: output_tokens only);
                 ollama: blocks start and stop in place, a tool input in one delta
    errors       {"status": 400, "error": {"type", "message"}}: llama's {"error": {"code",
                 "message", "type"}} (no top-level type), ollama's {"type": "error", "error":
                 {...}}; a 503 unavailable_error while the model loads; {"drop": True}
"""

import json
import threading

from fixtures.http_thread import post_server
from tests.support import fake_sse

IGNORED_FIELDS = ("fallbacks", "output_config", "tool_choice")


def _text(content):
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


def model_view(body):
    """What the model is shown: the system text joined with no separator, results as text."""
    system = body.get("system")
    seen = {"system": _text(system), "turns": []}
    for message in body.get("messages", []):
        content = message.get("content")
        for block in (content if isinstance(content, list) else [{"type": "text",
                                                                  "text": content}]):
            if block.get("type") == "tool_result":   # is_error does not get through
                seen["turns"].append(("tool", _text(block.get("content"))))
            elif block.get("type") == "text":
                seen["turns"].append((message.get("role"), block.get("text")))
    return seen


def ignored(body, headers):
    """What these servers would silently drop from the request."""
    found = [name for name in IGNORED_FIELDS if name in body]
    text = json.dumps(body)
    found += ["cache_control"] if '"cache_control"' in text else []
    found += ["strict"] if any(t.get("strict") for t in body.get("tools", [])) else []
    found += ["anthropic-beta"] if "anthropic-beta" in {k.lower() for k in headers} else []
    return found


class FakeLocalApi:
    """The fake server; use as a context manager. `.url` is the base URL to give the CLI."""

    def __init__(self, script, *, server="llama", token=None, first_byte_delay=0.0):
        assert server in ("llama", "ollama")
        self.script, self.server, self.token = list(script), server, token
        self.first_byte_delay = first_byte_delay
        self.requests, self.lock = [], threading.Lock()
        self.serving, self.url = post_server(lambda handler: self.handle(handler),
                                             name=f"fake-{server}")

    def __enter__(self):
        self.serving.start()
        return self

    def __exit__(self, *exc):
        self.serving.stop()

    def _send(self, handler, status, body):
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def error(self, status, error_type, message):
        """An error body in this server's shape."""
        if self.server == "llama":
            return {"error": {"code": status, "message": message, "type": error_type}}
        return {"type": "error", "error": {"type": error_type, "message": message}}

    def handle(self, handler):
        raw = handler.rfile.read(int(handler.headers.get("content-length") or 0))
        body = json.loads(raw)
        with self.lock:
            self.requests.append({"headers": dict(handler.headers), "body": body, "raw": raw,
                                  "seen": model_view(body),
                                  "ignored": ignored(body, handler.headers)})
            item = self.script.pop(0) if self.script else None
        if self.token and handler.headers.get("authorization") != f"Bearer {self.token}":
            return self._send(handler, 401, self.error(401, "authentication_error",
                                                       "Invalid API Key"))
        if item is None:
            return self._send(handler, 500, self.error(500, "server_error", "script exhausted"))
        if item.get("drop"):
            handler.close_connection = True
            return None
        if "error" in item:
            return self._send(handler, item["status"], self.error(
                item["status"], item["error"]["type"], item["error"]["message"]))
        message = self.answer(item, body)
        threading.Event().wait(self.first_byte_delay)   # reading the prompt, on a CPU
        try:
            if body.get("stream") is True:
                return fake_sse.serve(handler, message, rid="", release=None,
                                      events=self.events(message))
            return self._send(handler, 200, message)
        except OSError:   # a client that stopped waiting for the first byte has hung up
            return None

    def answer(self, item, body):
        """The script item as this server answers it: its usage fields and stop fields."""
        usage = item.get("usage") or {}
        total_in = sum(usage.get(k) or 0 for k in ("input_tokens", "cache_read_input_tokens",
                                                    "cache_creation_input_tokens"))
        message = {"id": "msg_local", "type": "message", "role": "assistant",
                   "model": body.get("model"), "content": item["content"]}
        if item.get("stop_reason") is not None:
            message["stop_reason"] = item["stop_reason"]
        if self.server == "llama":
            message["stop_sequence"] = None
            message["usage"] = {"cache_read_input_tokens": 0, "input_tokens": total_in,
                                "output_tokens": usage.get("output_tokens") or 0}
        else:
            message["usage"] = {"input_tokens": total_in,
                                "output_tokens": usage.get("output_tokens") or 0}
        return message

    def events(self, message):
        """This server's event stream for `message`."""
        skeleton = {k: v for k, v in message.items() if k not in ("stop_reason",
                                                                  "stop_sequence")}
        skeleton.update(content=[], usage={"input_tokens": message["usage"]["input_tokens"]})
        events = [("message_start", {"type": "message_start", "message": skeleton})]
        stops = []
        for index, block in enumerate(message["content"]):
            block_events = fake_sse._block_events(index, block)
            start = block_events[0][1]["content_block"]
            if self.server == "llama" and block["type"] == "tool_use":
                start.pop("input", None)
                block_events = [e for e in block_events
                                if e[1].get("delta", {}).get("partial_json") != ""]
            if self.server == "ollama" and block["type"] == "tool_use":
                block_events = block_events[:1] + [("content_block_delta", {
                    "type": "content_block_delta", "index": index, "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(block["input"])}})] + block_events[-1:]
            if self.server == "llama":
                stops.append(block_events.pop())
            events += block_events
        delta = {k: message[k] for k in ("stop_reason", "stop_sequence") if k in message}
        usage = {"output_tokens": message["usage"]["output_tokens"]}
        if self.server == "ollama":
            usage["input_tokens"] = message["usage"]["input_tokens"]
        return events + stops + [
            ("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}),
            ("message_stop", {"type": "message_stop"})]
