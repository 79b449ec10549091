"""A stdlib fake of the Anthropic Messages API for tests, strict about the conversation rules.

`FakeMessagesApi(script)` serves `POST /v1/messages` on 127.0.0.1:0 in a thread. Each request is
checked with `conversation_problems` (the rules the real API enforces with 400, worded as it words
them: every tool_use answered by tool_results at the start of the next user turn, ids matching, no
orphan results; tool_use ids unique over the conversation and of the form ^[a-zA-Z0-9_-]+$;
tool_use input an object; no empty or whitespace-only text block, nested ones included; no
message with empty content but an optional final assistant one, which may not end in
whitespace; only block types the role may carry) and `request_problems` (fields this project
must never send, and the tools list: objects with unique names of the API's form, object input
schemas, the strict ones within what strict mode takes); a request that is not JSON (NaN,
Infinity) or breaks a rule gets the real API's 400 error shape. Otherwise the next script item
is answered:

    {"status": 200, "body": {...}, "headers": {...}}   a response (headers optional)
    {"drop": True}                                       close the connection without answering
    a bare response body dict                            shorthand for status 200

A request with `"stream": true` gets its 200 answers as server-sent events (tests/support/fake_sse.py):
`FakeMessagesApi(script, sse={...})` sets how for every answer and an item's own `"sse": {...}`
for one (split: byte piece sizes, pings, after/then: how the stream ends, events or raw: the
exact events or bytes to send); `.hangups` lists the stalled streams the client closed. Error
statuses and drops stay what they were: failures before the stream.

Every request's headers, JSON body and raw bytes are kept in `.requests` for assertions; a
request the API would accept also gets `cached_bytes`, `written_bytes`, `reusable_bytes` and
`input_bytes` (what it read from the prompt cache, what it wrote to it, what it could have read,
its whole prompt; see tests/support/prompt_cache.py). Pass one `cache=PromptCache()` to two fakes to measure a second run
against the cache the first one left.
"""

import functools
import json
import re
import threading

from fixtures.http_thread import post_server
from tests.support import fake_sse
from tests.support.prompt_cache import PromptCache

ALLOWED_STRICT_KEYS = {"type", "enum", "const", "anyOf", "allOf", "description", "title",
                       "properties", "required", "additionalProperties", "items", "minItems",
                       "format"}
FORBIDDEN_FIELDS = ("thinking", "temperature", "top_p", "top_k", "tool_choice")


TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")
BLOCK_TYPES = {  # what each role may send (server-tool blocks left out: this project has none)
    "user": {"text", "image", "document", "search_result", "tool_result"},
    "assistant": {"text", "thinking", "redacted_thinking", "tool_use"}}
STRING_FIELDS = {"text": ("text",), "thinking": ("thinking", "signature"),
                 "redacted_thinking": ("data",), "tool_use": ("id", "name"),
                 "tool_result": ("tool_use_id",)}


def _blocks(message):
    content = message.get("content")
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def _text_problems(where, block):
    text = block.get("text")
    if block.get("type") == "text" and isinstance(text, str) and not text.strip():
        return [f"{where}: text content blocks must contain non-whitespace text"]
    nested = block.get("content") if block.get("type") == "tool_result" else None
    if isinstance(nested, str):
        nested = [{"type": "text", "text": nested}]
    return [p for j, inner in enumerate(nested if isinstance(nested, list) else [])
            if isinstance(inner, dict) for p in _text_problems(f"{where}.content.{j}", inner)]


def _block_problems(where, role, block):
    """One content block: its type allowed for the role, required strings, a tool_use's form."""
    if not isinstance(block, dict) or block.get("type") not in BLOCK_TYPES.get(role, ()):
        kind = block.get("type") if isinstance(block, dict) else type(block).__name__
        return [f"{where}: Input tag {kind!r} found using 'type' does not match any of the "
                f"expected tags: {sorted(BLOCK_TYPES.get(role, ()))}"]
    problems = [f"{where}.{block['type']}.{field}: Input should be a valid string"
                for field in STRING_FIELDS.get(block["type"], ())
                if not isinstance(block.get(field), str)]
    if problems:
        return problems
    if block["type"] == "tool_use":
        if not TOOL_USE_ID.fullmatch(block["id"]):
            problems.append(f"{where}.tool_use.id: String should match pattern "
                            "'^[a-zA-Z0-9_-]+$'")
        if not isinstance(block.get("input"), dict):
            problems.append(f"{where}.tool_use.input: Input should be a valid dictionary")
    return problems + _text_problems(where, block)


def _content_problems(i, message, last):
    content = message.get("content")
    if not content or (isinstance(content, str) and not content.strip()):
        if not (last and message.get("role") == "assistant"):
            return [f"messages.{i}: all messages must have non-empty content except for the "
                    "optional final assistant message"]
        return []
    blocks = _blocks(message)
    problems = [p for j, block in enumerate(blocks)
                for p in _block_problems(f"messages.{i}.content.{j}", message.get("role"), block)]
    tail = blocks[-1] if isinstance(blocks[-1], dict) else {}
    if (last and message.get("role") == "assistant" and tail.get("type") == "text"
            and isinstance(tail.get("text"), str) and tail["text"] != tail["text"].rstrip()):
        problems.append("messages: final assistant content cannot end with trailing whitespace")
    return problems


def _tool_result_problems(i, message, expected):
    problems, blocks = [], [b if isinstance(b, dict) else {} for b in _blocks(message)]
    leading = []
    for block in blocks:
        if block.get("type") != "tool_result":
            break
        leading.append(block.get("tool_use_id"))
    later = [b for b in blocks[len(leading):] if b.get("type") == "tool_result"]
    if later:
        problems.append(f"messages.{i}: tool_result blocks must come first in the user turn")
    if sorted(leading, key=str) != sorted(expected, key=str) or len(set(leading)) != len(leading):
        problems.append(f"messages.{i}: tool_use ids {sorted(expected, key=str)} need exactly "
                        f"one tool_result each at the start of the next turn, got {leading}")
    return problems


def _tool_use_ids(i, message, seen_ids):
    """The message's tool_use ids, and a problem for each one already used in the conversation."""
    uses, problems = [], []
    for j, block in enumerate(_blocks(message)):
        if isinstance(block, dict) and block.get("type") == "tool_use":
            if block.get("id") in seen_ids or block.get("id") in uses:
                problems.append(f"messages.{i}.content.{j}: `tool_use` ids must be unique")
            uses.append(block.get("id"))
    return uses, problems


def conversation_problems(messages):
    """The 400s the real API would give this message list (empty when it is valid)."""
    if not isinstance(messages, list) or not messages:
        return ["messages: at least one message is required"]
    if not all(isinstance(m, dict) for m in messages):
        return ["messages: each message must be an object"]
    if messages[0].get("role") != "user":
        return ["messages.0: the first message must use the user role"]
    problems, seen_ids, pending = [], set(), []
    for i, message in enumerate(messages):
        role = message.get("role")
        if i and role == messages[i - 1].get("role"):
            problems.append(f"messages.{i}: roles must alternate")
        problems += _content_problems(i, message, i == len(messages) - 1)
        if role == "assistant":
            pending, found = _tool_use_ids(i, message, seen_ids)
            problems += found
            seen_ids |= {u for u in pending if isinstance(u, str)}
            if pending and i == len(messages) - 1:
                problems.append(f"messages.{i}: a tool_use needs a tool_result in a next turn")
        elif role == "user":
            problems += _tool_result_problems(i, message, pending)
            pending = []
        else:
            problems.append(f"messages.{i}: unknown role {role!r}")
    return problems


def strict_schema_problems(schema, where="input_schema"):
    """What a strict tool's schema uses that the API rejects: keywords outside the subset, an
    object without additionalProperties false, minItems above 1."""
    if not isinstance(schema, dict):
        return [f"{where}: not a schema"]
    problems = [f"{where}: {key} not supported" for key in sorted(set(schema)
                                                                  - ALLOWED_STRICT_KEYS)]
    if schema.get("type") == "object" and schema.get("additionalProperties") is not False:
        problems.append(f"{where}: additionalProperties must be false")
    if schema.get("minItems", 0) not in (0, 1):
        problems.append(f"{where}: minItems must be 0 or 1")
    for name, sub in (schema.get("properties") or {}).items():
        problems += strict_schema_problems(sub, f"{where}.{name}")
    subs = schema.get("anyOf", []) + schema.get("allOf", []) + (
        [schema["items"]] if "items" in schema else [])
    for i, sub in enumerate(subs):
        problems += strict_schema_problems(sub, f"{where}[{i}]")
    return problems


def raw_field(raw, name):
    """The bytes of a top-level field's value exactly as sent (for byte-identity checks)."""
    text = raw.decode("utf-8")
    decoder, key = json.JSONDecoder(), json.dumps(name) + ":"
    start = text.index(key) + len(key)
    while text[start] == " ":
        start += 1
    _, end = decoder.raw_decode(text, start)
    return text[start:end].encode("utf-8")


def count_breakpoints(body, text=None):
    """Number of cache_control breakpoints anywhere in a request body (`text`: its JSON, when
    the caller has it already)."""
    return (text if text is not None else json.dumps(body)).count('"cache_control"')


def request_problems(body, text=None):
    """Fields and shapes this project must never send (`text`: the body's JSON, if at hand)."""
    problems = [f"{name}: not allowed" for name in FORBIDDEN_FIELDS if name in body]
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            problems.append(f"{field}: Field required")
    if count_breakpoints(body, text) > 4:
        problems.append("A maximum of 4 blocks with cache_control may be provided")
    tools = body.get("tools", [])
    if not isinstance(tools, list):
        problems.append("tools: Input should be a valid list")
    elif tools:
        problems += _tools_problems(json.dumps(tools))
    return problems + conversation_problems(body.get("messages"))


TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


@functools.lru_cache(maxsize=256)
def _tools_problems(tools_json):
    """What the API rejects in a tools list (by its JSON: a run sends the same list with every
    request, and the randomized loop tests make thousands of requests): a custom tool that is
    not an object with a name of 1 to 64 letters, digits, _ or -, or whose input_schema is not
    an object schema; two tools of one name; a strict tool's schema using what strict mode does
    not take. Server tools (a `type` other than custom) are left alone: this project sends none.
    The messages are the API's own, as public error reports quote them (`tools.7.custom.name:
    String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`, `tools: Tool names must be unique.`);
    reports from late 2025 show the pattern at {1,128}. The fake keeps 64, the stricter: the
    loop gives any other name one of at most 64 characters (prompts.API_NAME), so both pass."""
    problems, names = [], set()
    for i, tool in enumerate(json.loads(tools_json)):
        if not isinstance(tool, dict):
            problems.append(f"tools.{i}: Input should be a valid dictionary")
            continue
        if tool.get("type", "custom") not in ("custom", None):
            continue
        name = tool.get("name")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            problems.append(f"tools.{i}.custom.name: String should match pattern "
                            "'^[a-zA-Z0-9_-]{1,64}$'")
        elif name in names:
            problems.append("tools: Tool names must be unique.")
        names.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            problems.append(f"tools.{i}.custom.input_schema.type: Input should be 'object'")
        elif tool.get("strict"):
            problems += [f"tools.{name}.{p}" for p in strict_schema_problems(schema)]
    return tuple(problems)


def _no_constants(name):
    raise ValueError(f"{name} is not JSON")


def error_body(status, error_type, message, request_id):
    """The real API's error envelope."""
    return {"type": "error", "error": {"type": error_type, "message": message},
            "request_id": request_id}


BYTES_PER_TOKEN = 3.5  # count_usage's stand-in for a tokenizer
SMALL_USAGE = {"input_tokens": 10, "output_tokens": 5}  # a cheap turn, for replay fixtures


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

    def __init__(self, script, *, sse=None, cache=None, count_usage=False):
        self.script = list(script)
        self.count_usage = count_usage  # usage from the cache's bytes (BYTES_PER_TOKEN), not the script's
        self.sse = dict(sse or {})
        self.release = fake_sse.Release()   # lets a stalled stream go at the end
        self.hangups = []                    # request ids whose stalled stream the client closed
        self.hung_up = threading.Event()     # set at the first of them
        self.requests = []
        self.cache = PromptCache() if cache is None else cache
        self.lock = threading.Lock()
        # looked up per request: a test may swap `handle` on a running fake
        self.serving, self.url = post_server(lambda handler: self.handle(handler),
                                             name="fake-messages-api")

    def __enter__(self):
        self.serving.start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.serving.stop()
        self.release.close()

    def _send(self, handler, status, body, headers=None):
        data = json.dumps(body).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _hangup(self, rid):
        self.hangups.append(rid)
        self.hung_up.set()

    def handle(self, handler):
        length = int(handler.headers.get("content-length") or 0)
        self.answer(handler, handler.path, dict(handler.headers), handler.rfile.read(length))

    def error(self, handler, status, error_type, message, rid):
        """An error answer (a provider's fake words it its own way: fake_providers.py)."""
        self._send(handler, status, error_body(status, error_type, message, rid),
                   {"request-id": rid})

    def stream(self, handler, item, rid):
        """A 200 to a streamed request (a provider's fake frames it its own way)."""
        return fake_sse.serve(handler, item["body"], rid=rid, release=self.release,
                              on_hangup=self._hangup, **dict(self.sse, **item.get("sse", {})))

    def answer(self, handler, path, headers, raw, **kept):
        """Record the request (with `kept`), check it as the API would, answer the next item."""
        with self.lock:
            n = len(self.requests) + 1
            rid = f"req_fake_{n:03d}"
            try:
                body = json.loads(raw, parse_constant=_no_constants)
            except ValueError:
                body = None
            self.requests.append(dict({"path": path, "headers": headers, "body": body,
                                       "raw": raw}, **kept))
            item = self.script.pop(0) if self.script else None
        if path != "/v1/messages":
            return self.error(handler, 404, "not_found_error", "Not found", rid)
        problems = (request_problems(body, raw.decode("utf-8")) if isinstance(body, dict)
                    else ["There was an error parsing the body of your request: not JSON"])
        if problems:
            return self.error(handler, 400, "invalid_request_error", "; ".join(problems), rid)
        with self.lock:
            record = self.requests[n - 1]
            bill = self.cache.read(body)
            record.update(cached_bytes=bill.read, written_bytes=bill.written,
                          reusable_bytes=bill.reusable, input_bytes=bill.total)
        if item is None:
            return self.error(handler, 500, "api_error", "script exhausted", rid)
        if item.get("drop"):  # answer nothing: the client sees the connection close
            handler.close_connection = True
            return None
        if "status" not in item:
            item = {"status": 200, "body": item}
        if self.count_usage and item["status"] == 200:
            item = dict(item, body=dict(item["body"], usage={
                "input_tokens": int(bill.uncached / BYTES_PER_TOKEN), "output_tokens": 20,
                "cache_read_input_tokens": int(bill.read / BYTES_PER_TOKEN),
                "cache_creation_input_tokens": int(bill.written / BYTES_PER_TOKEN)}))
        headers = dict({"request-id": rid}, **item.get("headers", {}))
        if body.get("stream") is True and item["status"] == 200:
            return self.stream(handler, item, rid)
        return self._send(handler, item["status"], item["body"], headers)
