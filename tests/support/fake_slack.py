"""A fake Slack for the tests: the Web API methods serve calls on a local HTTP server, and the
Socket Mode WebSocket served by the `websockets` package (a real RFC 6455 server).

    slack = FakeSlack().start()        slack.api_url -> http://127.0.0.1:PORT/api/
    slack.fail("chat.postMessage", 429, retry_after=0)   the next call of that method fails so
    slack.envelope(kind, payload)      sends an envelope on the live connection; its id
    slack.wait_ack(envelope_id)        every ack is recorded; waits for this one
    slack.disconnect() / slack.drop_mid_envelope(...) / slack.ping()

Every chat.* body is checked: the right token, blocks that the official slack_sdk Block Kit
models accept (validate_json), at most 50 blocks, a text within 40,000 characters, button
values within 2,000; a failed check is answered with ok:false invalid_blocks and recorded in
`invalid`, which every test expects empty.
"""

import json
import socket
import threading
import time
import uuid
from collections import defaultdict, deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from slack_sdk.models.blocks import Block
from websockets.sync.server import serve

from fixtures.http_thread import ServerThread

BOT, APP = "xoxb-test-bot-token-0000", "xapp-test-app-token-0000"


def check_message(body) -> list:
    """What is wrong with a chat.* body by Slack's Block Kit rules (slack_sdk's models)."""
    problems = []
    if len(str(body.get("text", ""))) > 40000:
        problems.append("text over 40000")
    blocks = body.get("blocks") or []
    if len(blocks) > 50:
        problems.append(f"{len(blocks)} blocks")
    for raw in blocks:
        block = Block.parse(raw)
        if block is None:
            problems.append(f"unknown block {raw.get('type')}")
            continue
        try:
            block.validate_json()
        except Exception as exc:
            problems.append(f"{raw.get('type')}: {exc}")
        for element in raw.get("elements") or ():
            if len(str(element.get("value", ""))) > 2000:
                problems.append("button value over 2000")
    return problems


class FakeSlack:
    def __init__(self):
        self.calls = []                    # (method, body) of every Web API call
        self.messages = {}                 # ts -> the message's current body
        self.ephemeral = []
        self.invalid = []
        self.acks = []
        self.opens = 0
        self.auth_seen = set()
        self._script = defaultdict(deque)
        self._conns = []                   # every WebSocket connection, in order
        self._cond = threading.Condition()
        self._seq = 0

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                fake._web(self)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.serving = ServerThread(self.http, name="fake-slack").start()
        self.api_url = f"http://127.0.0.1:{self.http.server_address[1]}/api/"
        self.ws = serve(self._socket, "127.0.0.1", 0)
        threading.Thread(target=self.ws.serve_forever, daemon=True).start()
        self.ws_port = self.ws.socket.getsockname()[1]
        return self

    def stop(self):
        self.serving.stop()
        self.ws.shutdown()

    def wait(self, predicate, timeout=20.0):
        end = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = end - time.monotonic()
                assert left > 0, "the fake Slack did not see what the test waited for"
                self._cond.wait(left)

    # --- the Web API ----------------------------------------------------------------------

    def fail(self, method, status, *, retry_after=None, error=None):
        """The next call of `method` is answered with this failure (queued in order)."""
        self._script[method].append((status, retry_after, error))

    def _web(self, handler):
        method = handler.path.rsplit("/", 1)[-1]
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        auth = handler.headers.get("Authorization", "")
        with self._cond:
            self.calls.append((method, body))
            self.auth_seen.add(auth)
            scripted = self._script[method].popleft() if self._script[method] else None
        if scripted:
            status, retry_after, error = scripted
            if error:
                return self._answer(handler, 200, {"ok": False, "error": error})
            headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
            return self._answer(handler, status, {"ok": False, "error": "scripted"}, headers)
        want = APP if method == "apps.connections.open" else BOT
        if auth != f"Bearer {want}":
            return self._answer(handler, 200, {"ok": False, "error": "invalid_auth"})
        self._answer(handler, 200, self._method(method, body))

    def _method(self, method, body):
        with self._cond:
            try:
                if method == "apps.connections.open":
                    self.opens += 1
                    return {"ok": True, "url": f"ws://127.0.0.1:{self.ws_port}/link?n={self.opens}"}
                problems = check_message(body)
                if problems:
                    self.invalid.append((method, problems))
                    return {"ok": False, "error": "invalid_blocks"}
                if method == "chat.postMessage":
                    if body.get("thread_ts") and body["thread_ts"] not in self.messages:
                        return {"ok": False, "error": "thread_not_found"}
                    self._seq += 1
                    ts = f"1765000000.{self._seq:06d}"
                    self.messages[ts] = dict(body, ts=ts)
                    return {"ok": True, "channel": body.get("channel"), "ts": ts}
                if method == "chat.update":
                    if body.get("ts") not in self.messages:
                        return {"ok": False, "error": "message_not_found"}
                    old = self.messages[body["ts"]]
                    self.messages[body["ts"]] = dict(body, thread_ts=old.get("thread_ts"))
                    return {"ok": True, "channel": body.get("channel"), "ts": body["ts"]}
                if method == "chat.postEphemeral":
                    self.ephemeral.append(body)
                    return {"ok": True, "message_ts": "1765000000.999999"}
                return {"ok": False, "error": "unknown_method"}
            finally:
                self._cond.notify_all()

    @staticmethod
    def _answer(handler, status, doc, headers=None):
        data = json.dumps(doc).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def posted(self, method=None):
        with self._cond:
            return [body for m, body in self.calls if method in (None, m)]

    # --- Socket Mode ----------------------------------------------------------------------

    def _socket(self, conn):
        with self._cond:
            self._conns.append(conn)
            self._cond.notify_all()
        conn.send(json.dumps({"type": "hello", "num_connections": 1}))
        try:
            for text in conn:
                message = json.loads(text)
                with self._cond:
                    self.acks.append(message.get("envelope_id"))
                    self._cond.notify_all()
        except Exception:
            pass
        finally:
            with self._cond:
                self._cond.notify_all()

    def connection(self, opens=1):
        """The newest connection, once at least `opens` WebSocket connections were made."""
        self.wait(lambda: len(self._conns) >= opens)
        return self._conns[-1]

    def envelope(self, kind, payload, *, envelope_id=None, fragments=1, opens=1):
        """Send one envelope; its id."""
        envelope_id = envelope_id or str(uuid.uuid4())
        text = json.dumps({"envelope_id": envelope_id, "type": kind, "payload": payload,
                           "accepts_response_payload": False, "retry_attempt": 0})
        conn = self.connection(opens)
        if fragments > 1:
            size = len(text) // fragments + 1
            conn.send([text[i:i + size] for i in range(0, len(text), size)])
        else:
            conn.send(text)
        return envelope_id

    def wait_ack(self, envelope_id, count=1):
        self.wait(lambda: self.acks.count(envelope_id) >= count)

    def disconnect(self, reason="refresh_requested", opens=1):
        self.connection(opens).send(json.dumps({"type": "disconnect", "reason": reason}))

    def drop_mid_envelope(self, kind, payload, envelope_id, opens=1):
        """Half of an envelope's first fragment, then the TCP connection dies."""
        text = json.dumps({"envelope_id": envelope_id, "type": kind, "payload": payload})
        half = text[:len(text) // 2].encode()
        conn = self.connection(opens)
        raw = conn.socket
        raw.sendall(bytes([0x01, len(half)]) + half if len(half) < 126 else
                    bytes([0x01, 126]) + len(half).to_bytes(2, "big") + half)
        raw.shutdown(socket.SHUT_RDWR)
        raw.close()
