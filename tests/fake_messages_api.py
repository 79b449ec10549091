"""A stdlib fake of the Anthropic Messages API for tests, strict about the conversation rules.

`FakeMessagesApi(script)` serves `POST /v1/messages` on 127.0.0.1:0 in a thread. Each request is
checked with `conversation_problems` (the rules the real API enforces with 400: every tool_use
answered by tool_results at the start of the next user turn, ids matching, no orphan results) and
`request_problems` (fields this project must never send); a broken request gets the real API's
400 error shape. Otherwise the next script item is answered:

    {"status": 200, "body": {...}, "headers": {...}}   a response (headers optional)
    {"drop": True}                                       close the connection without answering
    a bare response body dict                            shorthand for status 200

Every request's headers, JSON body and raw bytes are kept in `.requests` for assertions.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ALLOWED_STRICT_KEYS = {"type", "enum", "const", "anyOf", "allOf", "description", "title",
                       "properties", "required", "additionalProperties", "items", "minItems",
                       "format"}
FORBIDDEN_FIELDS = ("thinking", "temperature", "top_p", "top_k", "tool_choice")


def _blocks(message):
    content = message.get("content")
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def _tool_result_problems(i, message, expected):
    problems, blocks = [], _blocks(message)
    leading = []
    for block in blocks:
        if block.get("type") != "tool_result":
            break
        leading.append(block.get("tool_use_id"))
    later = [b for b in blocks[len(leading):] if b.get("type") == "tool_result"]
    if later:
        problems.append(f"messages.{i}: tool_result blocks must come first in the user turn")
    if sorted(leading) != sorted(expected) or len(set(leading)) != len(leading):
        problems.append(f"messages.{i}: tool_use ids {sorted(expected)} need exactly one "
                        f"tool_result each at the start of the next turn, got {leading}")
    return problems


def conversation_problems(messages):
    """The 400s the real API would give this message list (empty when it is valid)."""
    if not isinstance(messages, list) or not messages:
        return ["messages: at least one message is required"]
    if messages[0].get("role") != "user":
        return ["messages.0: the first message must use the user role"]
    problems, seen_ids, pending = [], set(), []
    for i, message in enumerate(messages):
        role = message.get("role")
        if i and role == messages[i - 1].get("role"):
            problems.append(f"messages.{i}: roles must alternate")
        if role == "assistant":
            uses = [b.get("id") for b in _blocks(message) if b.get("type") == "tool_use"]
            if seen_ids & set(uses) or len(set(uses)) != len(uses):
                problems.append(f"messages.{i}: tool_use ids must be unique")
            seen_ids |= set(uses)
            pending = uses
            if uses and i == len(messages) - 1:
                problems.append(f"messages.{i}: a tool_use needs a tool_result in a next turn")
        elif role == "user":
            problems += _tool_result_problems(i, message, pending)
            pending = []
        else:
            problems.append(f"messages.{i}: unknown role {role!r}")
    return problems


def _schema_keys(schema, out):
    if isinstance(schema, dict):
        for key, value in schema.items():
            out.add(key)
            if key == "properties" and isinstance(value, dict):
                for sub in value.values():
                    _schema_keys(sub, out)
            elif key in ("items", "anyOf", "allOf"):
                for sub in value if isinstance(value, list) else [value]:
                    _schema_keys(sub, out)
    return out


def raw_field(raw, name):
    """The bytes of a top-level field's value exactly as sent (for byte-identity checks)."""
    text = raw.decode("utf-8")
    decoder, key = json.JSONDecoder(), json.dumps(name) + ":"
    start = text.index(key) + len(key)
    while text[start] == " ":
        start += 1
    _, end = decoder.raw_decode(text, start)
    return text[start:end].encode("utf-8")


def count_breakpoints(body):
    """Number of cache_control breakpoints anywhere in a request body."""
    text = json.dumps(body)
    return text.count('"cache_control"')


def request_problems(body):
    """Fields and shapes this project must never send."""
    problems = [f"{name}: not allowed" for name in FORBIDDEN_FIELDS if name in body]
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            problems.append(f"{field}: Field required")
    if count_breakpoints(body) > 4:
        problems.append("A maximum of 4 blocks with cache_control may be provided")
    for tool in body.get("tools", []):
        if tool.get("strict"):
            extra = _schema_keys(tool.get("input_schema"), set()) - ALLOWED_STRICT_KEYS
            extra -= {"properties"}
            if extra:
                problems.append(f"tools.{tool.get('name')}: strict schema uses {sorted(extra)}")
    return problems + conversation_problems(body.get("messages"))


def error_body(status, error_type, message, request_id):
    """The real API's error envelope."""
    return {"type": "error", "error": {"type": error_type, "message": message},
            "request_id": request_id}


def tool_use(tool_use_id, name, arguments):
    """A tool_use content block."""
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": arguments}


def response(stop_reason, *blocks, model="claude-opus-5-5", usage=None):
    """A Messages API response body."""
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": list(blocks), "stop_reason": stop_reason, "stop_sequence": None,
            "usage": usage or {"input_tokens": 100, "output_tokens": 20,
                               "cache_creation_input_tokens": 0,
                               "cache_read_input_tokens": 0}}


def text(words):
    """A text content block."""
    return {"type": "text", "text": words}


class FakeMessagesApi:
    """The fake server; use as a context manager. `.url` is the ANTHROPIC_BASE_URL."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                fake.handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def _send(self, handler, status, body, headers=None):
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    def handle(self, handler):
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length)
        with self.lock:
            n = len(self.requests) + 1
            rid = f"req_fake_{n:03d}"
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            self.requests.append({"path": handler.path, "headers": dict(handler.headers),
                                  "body": body, "raw": raw})
            item = self.script.pop(0) if self.script else None
        if handler.path != "/v1/messages" or body is None:
            return self._send(handler, 404, error_body(404, "not_found_error", "Not found", rid),
                              {"request-id": rid})
        problems = request_problems(body)
        if problems:
            return self._send(handler, 400, error_body(400, "invalid_request_error",
                                                       "; ".join(problems), rid),
                              {"request-id": rid})
        if item is None:
            return self._send(handler, 500, error_body(500, "api_error", "script exhausted",
                                                       rid), {"request-id": rid})
        if item.get("drop"):  # answer nothing: the client sees the connection close
            handler.close_connection = True
            return None
        if "status" not in item:
            item = {"status": 200, "body": item}
        headers = dict({"request-id": rid}, **item.get("headers", {}))
        return self._send(handler, item["status"], item["body"], headers)
