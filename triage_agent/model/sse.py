"""A streamed Messages API response: server-sent events in, the non-streamed message dict out.

The body of a 200 to a `"stream": true` request is a text/event-stream: events separated by a
blank line, each with an `event: NAME` line and `data: JSON` line(s). Lines end in LF, CRLF or
CR; `:` starts a comment. Bytes arrive split anywhere (inside a UTF-8 character, inside a JSON
string), so decoding and line splitting are incremental. The events of one message:

    message_start        {message: the message skeleton, content [], usage so far}
                         (a self-hosted server may send it only once the first token is ready)
    content_block_start  {index, content_block: the block skeleton}   index = next block
      content_block_delta {index, delta}   text_delta.text        -> block.text +=
                                           thinking_delta.thinking -> block.thinking +=
                                           signature_delta.signature -> block.signature =
                                           input_json_delta.partial_json -> block.input, parsed
                                                                    at content_block_stop
                                           citations_delta.citation -> block.citations.append
                                           compaction_delta        -> block.content,
                                                                      block.encrypted_content =
      content_block_stop  {index}
    message_delta        {delta: {stop_reason, stop_sequence, ...}, usage: cumulative counts}
                         (either may be missing from a self-hosted server; blocks are tracked
                         by index, so their stops may all come late, just before this)
    message_stop         the message is complete
    ping (any time)      keep-alive;  error {error: {type, message}}: the answer failed

Blocks without deltas (redacted_thinking, server tool results, fallback) arrive whole in their
content_block_start and are kept as they came; a fallback block names the model that served the
rest of the turn, which becomes the message's `model` as in the non-streamed answer. Unknown
events and delta types are ignored, as the API asks of clients. A stream that breaks the shape
(no message_stop, a tool input that is not JSON, events out of order) raises StreamError: none
of it reaches the loop, and the caller may send the request again.
"""

import codecs
import json

FIELD_DELTAS = {"text_delta": ("text", "text"), "thinking_delta": ("thinking", "thinking"),
                "input_json_delta": ("input", "partial_json")}  # -> block field, delta key
CONTENT_EVENTS = ("content_block_start", "content_block_delta", "content_block_stop",
                  "message_delta", "message_stop")
KNOWN_EVENTS = ("message_start", "error") + CONTENT_EVENTS
# what a block skeleton holds before its deltas; llama-server starts a tool_use without `input`
BLOCK_DEFAULTS = {"text": (("text", str),), "thinking": (("thinking", str),),
                  "tool_use": (("input", dict),)}


class StreamError(Exception):
    """The event stream did not deliver a whole message: the API's error type (or ours) and why."""

    def __init__(self, error_type, message):
        super().__init__(message)
        self.error_type, self.message = error_type, message


class EventDecoder:
    """Bytes in any pieces -> (event name, data text) for each complete event."""

    def __init__(self):
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._tail = ""           # an unfinished line
        self._skip_lf = False     # the last chunk ended in CR: an LF starting this one is its pair
        self._name, self._data = None, []

    def feed(self, chunk: bytes) -> list:
        """The events completed by `chunk`; StreamError when the bytes are not UTF-8."""
        try:
            text = self._utf8.decode(chunk)
        except UnicodeDecodeError as exc:
            raise StreamError("invalid_response", f"the event stream is not UTF-8: {exc}") \
                from None
        if not text:
            return []
        if self._skip_lf and text[0] == "\n":
            text = text[1:]
        self._skip_lf = text.endswith("\r")
        if "\r" in text:         # CRLF and a lone CR end lines as LF does
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = (self._tail + text).split("\n")
        self._tail = lines.pop()
        events = []
        for line in lines:
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def _line(self, line):
        if not line:              # a blank line ends the event
            event = (self._name, "\n".join(self._data)) if self._data else None
            self._name, self._data = None, []
            return event
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            self._name = value
        elif field == "data":
            self._data.append(value)
        return None               # id, retry and unknown fields mean nothing here


class MessageAssembler:
    """Applies events in order; `.message()` is the whole message once message_stop came.

    `apply` returns what the event means to a person watching, or None: ("tokens", n),
    ("block", type, tool name or None), ("text"|"thinking"|"input", piece), ("block_stop", type).
    """

    def __init__(self):
        self.snapshot = None      # the message as assembled so far
        self.stopped = False
        self.events = 0
        self._pieces = {}         # (block index, field) -> the text pieces so far (joined
                                  # at content_block_stop: += on a long text is quadratic)
        self._open = set()        # indexes of blocks started and not yet stopped

    def apply(self, name, data_text):
        """Apply one event; StreamError when it is an error event or breaks the shape."""
        self.events += 1
        if name and name not in KNOWN_EVENTS:
            return None           # ping, and whatever a newer API version adds
        try:
            data = json.loads(data_text)
        except ValueError:
            raise StreamError("invalid_response", f"event {name!r} carries data that is not "
                              f"JSON: {data_text[:200]!r}") from None
        kind = name or (data.get("type") if isinstance(data, dict) else None)
        if kind is None and isinstance(data, dict) and isinstance(data.get("error"), dict):
            kind = "error"        # a self-hosted server's unnamed {"error": {...}}
        if kind == "error":
            error = data.get("error") if isinstance(data, dict) else None
            error = error if isinstance(error, dict) else {}
            raise StreamError(str(error.get("type") or "api_error"),
                              str(error.get("message") or "(no message)"))
        if kind not in KNOWN_EVENTS:
            return None           # an unnamed ping or newer event
        if not isinstance(data, dict):
            raise StreamError("invalid_response", f"event {kind!r} is not a JSON object")
        if self.stopped:
            raise StreamError("invalid_response", f"event {kind!r} after message_stop")
        if kind == "message_start":
            return self._start(data)
        if self.snapshot is None:
            raise StreamError("invalid_response", f"event {kind!r} before message_start")
        try:
            return getattr(self, "_" + kind)(data)
        except (KeyError, TypeError, AttributeError, IndexError) as exc:
            raise StreamError("invalid_response", f"event {kind!r} is malformed "
                              f"({type(exc).__name__}: {exc}): {data_text[:200]!r}") from None

    def _start(self, data):
        message = data.get("message")
        if self.snapshot is not None or not isinstance(message, dict) \
                or not isinstance(message.get("content"), list) or message["content"]:
            raise StreamError("invalid_response", "message_start without a message skeleton "
                              "(or a second one)")
        self.snapshot = message
        return ("tokens", _output_tokens(message.get("usage")))

    def _content_block_start(self, data):
        index, block = data["index"], data["content_block"]
        content = self.snapshot["content"]
        if index != len(content) or not isinstance(block, dict):
            raise StreamError("invalid_response", f"content_block_start for block {index!r} "
                              f"while {len(content)} blocks exist")
        for field, empty in BLOCK_DEFAULTS.get(block.get("type"), ()):
            block.setdefault(field, empty())   # self-hosted servers may start a block bare
        content.append(block)
        self._open.add(index)
        if block.get("type") == "fallback" and isinstance(block.get("to"), dict) \
                and block["to"].get("model"):
            self.snapshot["model"] = block["to"]["model"]
        return ("block", block.get("type"), block.get("name"))

    def _content_block_delta(self, data):
        index, delta = data["index"], data["delta"]
        if index not in self._open:
            raise StreamError("invalid_response", f"a delta for block {index!r}, which is "
                              "not open")
        block, kind = self.snapshot["content"][index], delta.get("type")
        field, key = FIELD_DELTAS.get(kind, (None, None))
        if field in block:
            piece = delta[key]
            if not isinstance(piece, str):
                raise TypeError(f"{kind} carries no text")
            self._pieces.setdefault((index, field), []).append(piece)
            return (field, piece)
        if kind == "signature_delta" and block.get("type") == "thinking":
            block["signature"] = delta["signature"]
        elif kind == "citations_delta":
            if not isinstance(block.get("citations"), list):
                block["citations"] = []
            block["citations"].append(delta["citation"])
        elif kind == "compaction_delta":
            block["content"] = delta.get("content")
            block["encrypted_content"] = delta.get("encrypted_content")
        return None

    def _content_block_stop(self, data):
        index = data["index"]
        if index not in self._open:
            raise StreamError("invalid_response", f"content_block_stop for block {index!r}, "
                              "which is not open")
        self._open.discard(index)
        block = self.snapshot["content"][index]
        for field in ("text", "thinking"):
            if (index, field) in self._pieces:
                block[field] += "".join(self._pieces.pop((index, field)))
        partial = "".join(self._pieces.pop((index, "input"), ()))
        if partial:               # no input deltas: the skeleton's input ({}) stands
            try:
                block["input"] = json.loads(partial)
            except ValueError as exc:
                raise StreamError("invalid_tool_input", f"the input of {block.get('type')} "
                                  f"{block.get('name')!r} is not valid JSON ({exc}): "
                                  f"{partial[:200]!r}") from None
        return ("block_stop", block.get("type"))

    def _message_delta(self, data):
        delta = data.get("delta")
        self.snapshot.update(delta if isinstance(delta, dict) else {})
        usage = data.get("usage")
        if isinstance(usage, dict):
            if not isinstance(self.snapshot.get("usage"), dict):
                self.snapshot["usage"] = {}
            self.snapshot["usage"].update({k: v for k, v in usage.items() if v is not None})
        if data.get("context_management") is not None:
            self.snapshot["context_management"] = data["context_management"]
        return ("tokens", _output_tokens(self.snapshot.get("usage")))

    def _message_stop(self, data):
        if self._open:
            raise StreamError("invalid_response", f"message_stop while blocks "
                              f"{sorted(self._open)} are still open")
        self.stopped = True
        return None

    def message(self) -> dict:
        """The assembled message; StreamError when the stream ended before message_stop."""
        if not self.stopped:
            raise StreamError("incomplete_stream", "the event stream ended before "
                              f"message_stop ({self.events} events)")
        return self.snapshot


def _output_tokens(usage):
    value = usage.get("output_tokens") if isinstance(usage, dict) else None
    return value if isinstance(value, int) else 0


def read_message(response, *, on_event=None, on_first_chunk=None, chunk_size=65536) -> dict:
    """Read a streamed answer from an http.client response into the message dict.

    `on_event(meaning)` sees each event's meaning for a person (MessageAssembler.apply) as it
    arrives; `on_first_chunk()` is called once the first bytes have come. Socket timeouts and
    broken connections propagate as the socket raised them."""
    decoder, assembler = EventDecoder(), MessageAssembler()
    while not assembler.stopped:
        chunk = response.read1(chunk_size)
        if not chunk:
            break
        if on_first_chunk is not None:
            on_first_chunk()
            on_first_chunk = None
        for name, data in decoder.feed(chunk):
            meaning = assembler.apply(name, data)
            if meaning is not None and on_event is not None:
                on_event(meaning)
            if assembler.stopped:
                break
    return assembler.message()
