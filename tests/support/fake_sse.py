"""The streaming half of the fake Messages API: a response body as the server-sent events the
real API would send for it, cut into byte pieces at chosen places, written over real HTTP.

    events_for(message)   message_start (skeleton, usage without the output count),
                          per block: content_block_start (skeleton), deltas, content_block_stop,
                          message_delta (stop_reason, stop_sequence, usage), message_stop
    encode(events, pings) the text/event-stream bytes, optionally a ping between every two
    serve(handler, ...)   a chunked 200 with the bytes in pieces, ending as asked:
                          "stop" (normally), "error" (an error event after `after` events),
                          "drop" (connection closed mid-stream), "stall" (silence until
                          the client hangs up or the test ends: Release), "end" (a clean end
                          without the remaining events); `events` or `raw` bytes replace the
                          generated stream

Assembling `events_for(m)` gives back exactly `m`: that is what the client is tested against.
"""

import json
import os
import select
import threading

PIECE = 7  # characters per text, thinking or JSON delta: small, so every block has several


def _pieces(text, size=PIECE):
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _block_events(index, block):
    """content_block_start, deltas and content_block_stop for one block."""
    kind, deltas = block.get("type"), []
    skeleton = dict(block)
    if kind == "text":
        skeleton["text"] = ""
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block.get("text", ""))]
        if isinstance(block.get("citations"), list) and block["citations"]:
            del skeleton["citations"]
            deltas += [{"type": "citations_delta", "citation": c} for c in block["citations"]]
    elif kind == "thinking":
        skeleton.update(thinking="", signature="")
        deltas = [{"type": "thinking_delta", "thinking": p}
                  for p in _pieces(block.get("thinking", ""))]
        deltas.append({"type": "signature_delta", "signature": block.get("signature", "")})
    elif "input" in block:        # tool_use, server_tool_use, mcp_tool_use
        skeleton["input"] = {}
        raw = json.dumps(block["input"], ensure_ascii=False) if block["input"] != {} else ""
        # the API starts tool input with an empty piece; an empty input has nothing else
        deltas = [{"type": "input_json_delta", "partial_json": p}
                  for p in [""] + (_pieces(raw) if raw else [])]
    events = [("content_block_start", {"type": "content_block_start", "index": index,
                                       "content_block": skeleton})]
    events += [("content_block_delta", {"type": "content_block_delta", "index": index,
                                        "delta": d}) for d in deltas]
    return events + [("content_block_stop", {"type": "content_block_stop", "index": index})]


def events_for(message):
    """The event list the real API would stream for `message` (a response body)."""
    usage = dict(message.get("usage") or {})
    start_usage = dict(usage, output_tokens=1)   # message_start counts almost nothing yet
    skeleton = dict(message, content=[], stop_reason=None, stop_sequence=None,
                    usage=start_usage)
    fallback = [b for b in message.get("content", []) if b.get("type") == "fallback"]
    if fallback:                                  # the stream starts under the requested model
        skeleton["model"] = fallback[0].get("from", {}).get("model", skeleton.get("model"))
    events = [("message_start", {"type": "message_start", "message": skeleton})]
    for index, block in enumerate(message.get("content", [])):
        events += _block_events(index, block)
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message.get("stop_reason"),
                                               "stop_sequence": message.get("stop_sequence")},
                                     "usage": {"output_tokens": usage.get("output_tokens")}}))
    return events + [("message_stop", {"type": "message_stop"})]


def error_event(kind="overloaded_error", message="Overloaded"):
    """An error event as the API sends it mid-stream."""
    return ("error", {"type": "error", "error": {"type": kind, "message": message}})


def encode(events, *, pings=False, crlf=False):
    """The event-stream bytes; a ping between every two events when asked."""
    out, end = [], "\r\n" if crlf else "\n"
    for i, (name, data) in enumerate(events):
        if pings and i:
            out.append(f"event: ping{end}data: {{\"type\": \"ping\"}}{end}{end}")
        out.append(f"event: {name}{end}data: {json.dumps(data, ensure_ascii=False)}{end}{end}")
    return "".join(out).encode("utf-8")


def cut(data, sizes):
    """`data` in pieces of the given sizes, cycled (an int: all the same size)."""
    sizes = [sizes] if isinstance(sizes, int) else list(sizes)
    pieces, at, i = [], 0, 0
    while at < len(data):
        size = max(1, sizes[i % len(sizes)])
        pieces.append(data[at:at + size])
        at, i = at + size, i + 1
    return pieces


class Release:
    """An event a stalled handler waits on together with its socket (a pipe underneath);
    `close` waits for the stalled handlers to leave before closing the pipe."""

    def __init__(self):
        self._read, self._write = os.pipe()
        self._waiting = 0
        self._left = threading.Condition()

    def set(self):
        os.write(self._write, b"x")

    def wait_or_hangup(self, connection, limit=60):
        """Wait until released or the client closes; True when the client closed. A client
        that exits with bytes of the stream still unread closes with a reset, not an orderly
        end: that is a hang-up too. The limit only bounds a test that forgets to release."""
        with self._left:
            self._waiting += 1
        try:
            ready, _, _ = select.select([connection, self._read], [], [], limit)
            if connection not in ready:
                return False
            try:
                return not connection.recv(1)
            except ConnectionError:
                return True
        finally:
            with self._left:
                self._waiting -= 1
                self._left.notify_all()

    def close(self):
        with self._left:
            self._left.wait_for(lambda: self._waiting == 0, timeout=5)
        os.close(self._read)
        os.close(self._write)


def serve(handler, body, *, rid, release, on_hangup=None, split=None, pings=False, after=None,
          then="stop", events=None, crlf=False, raw=None):
    """Write `body` to `handler` as a chunked event stream (see the module docstring); `raw`:
    these exact bytes instead."""
    events = list(events) if events is not None else events_for(body)
    if then != "stop":
        events = events[:after]
        if then == "error":
            events.append(error_event())
    raw = encode(events, pings=pings, crlf=crlf) if raw is None else raw
    pieces = cut(raw, split or 1 << 20)
    handler.protocol_version = "HTTP/1.1"
    handler.close_connection = True
    handler.send_response(200)
    for name, value in (("content-type", "text/event-stream; charset=utf-8"),
                        ("transfer-encoding", "chunked"), ("connection", "close"),
                        ("request-id", rid)):
        handler.send_header(name, value)
    handler.end_headers()
    for piece in pieces:
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.flush()
    if then == "stall":           # silent until the client gives up (or the test ends)
        if release.wait_or_hangup(handler.connection) and on_hangup is not None:
            on_hangup(rid)
        return
    if then == "drop":            # no terminating chunk: the client sees the stream break
        handler.connection.shutdown(2)
        return
    try:
        handler.wfile.write(b"0\r\n\r\n")
    except OSError:               # the client stops reading at message_stop and may be gone
        pass
