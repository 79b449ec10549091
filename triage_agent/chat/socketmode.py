"""Slack Socket Mode: events and button clicks over a WebSocket the service opens itself.

    POST apps.connections.open (the xapp- app-level token) -> {"ok": true, "url": "wss://..."}
    <- {"type": "hello", ...}
    <- {"envelope_id": E, "type": "events_api" | "interactive" | ..., "payload": {...},
        "retry_attempt": N, ...}
    -> {"envelope_id": E}                       the ack: within 3 seconds, before any work
    <- {"type": "disconnect", "reason": "refresh_requested" | "warning" | ...}

Every envelope is acknowledged as soon as it is read, then handed to a small pool of threads,
so a slow handler never delays an ack. Slack delivers again an envelope whose ack it did not get
(a connection that dropped mid-envelope), so each is handled once: by envelope_id, and for
events by event_id (a retried event may come in a new envelope). A `disconnect` envelope opens
a new connection at once; a dropped one, or a failed open, tries again after an exponential
backoff with full jitter (capped), reset by the next `hello`. Each URL is used once.
"""

import json
import random
import sys
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

from triage_agent.chat import websocket
from triage_agent.chat.webapi import SlackApiError

SEEN_KEPT = 5000


class SocketMode:
    """One Socket Mode connection at a time, reconnected until `stop`."""

    def __init__(self, api, handle, *, connect=websocket.connect, delay=1.0, max_delay=60.0,
                 keepalive=10.0, rng=random.random, workers=4, log=None):
        self.api, self.handle, self.connect = api, handle, connect
        self.delay, self.max_delay, self.keepalive, self.rng = delay, max_delay, keepalive, rng
        self.log = log or (lambda text: print(f"triage-agent serve: slack: {text}",
                                              file=sys.stderr, flush=True))
        self.acks = 0
        self.connections = 0
        self._seen = OrderedDict()
        self._seen_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="slack-event")
        self._stop = threading.Event()
        self._ws = None
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self.run, name="slack-socket", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout=5.0):
        """Close the connection, stop reconnecting, let handlers finish for up to `timeout`."""
        self._stop.set()
        ws = self._ws
        if ws is not None:
            ws.close(1000, "serve is stopping")
        if self._thread is not None:
            self._thread.join(timeout)
        self._pool.shutdown(wait=True, cancel_futures=False)

    def run(self):
        failures = 0
        while not self._stop.is_set():
            try:
                clean = self._session()
                failures = 0 if clean else failures + 1
            except (websocket.WebSocketError, SlackApiError) as exc:
                failures += 1
                self.log(f"Socket Mode connection failed: {exc}")
            if failures and not self._stop.is_set():
                wait = self.rng() * min(self.max_delay, self.delay * 2 ** (failures - 1))
                self._stop.wait(wait)

    def _session(self) -> bool:
        """One connection until Slack asks us to reconnect (True) or it drops (False)."""
        url = self.api.call("apps.connections.open").get("url")
        if not isinstance(url, str) or not url.startswith(("wss://", "ws://")):
            raise SlackApiError("apps.connections.open", "no WebSocket URL in the answer",
                                retryable=True)
        ws = self.connect(url, keepalive=self.keepalive)
        self._ws = ws
        self.connections += 1
        try:
            while not self._stop.is_set():
                text = ws.recv()
                if text is None:
                    return False
                if self._take(ws, text) == "disconnect":
                    return True
            return True
        except websocket.WebSocketError as exc:
            if not self._stop.is_set():
                self.log(f"Socket Mode connection lost: {exc}")
            return False
        finally:
            self._ws = None
            ws.close()

    def _take(self, ws, text):
        try:
            message = json.loads(text)
        except ValueError:
            self.log("a Socket Mode message that is not JSON was ignored")
            return None
        if not isinstance(message, dict):
            return None
        kind = message.get("type")
        if kind == "disconnect":
            self.log(f"Slack asked for a new connection ({message.get('reason')})")
            return "disconnect"
        envelope_id = message.get("envelope_id")
        if not isinstance(envelope_id, str) or not envelope_id:
            return kind  # hello, and anything else that needs no ack
        ws.send_text(json.dumps({"envelope_id": envelope_id}))
        self.acks += 1
        payload = message.get("payload")
        if not isinstance(payload, dict):
            return kind
        keys = [("envelope", envelope_id)]
        if kind == "events_api" and isinstance(payload.get("event_id"), str):
            keys.append(("event", payload["event_id"]))
        if self._first(keys):
            self._pool.submit(self._run_handler, kind, payload)
        return kind

    def _first(self, keys) -> bool:
        """True when none of the keys was seen before (and marks them all seen)."""
        with self._seen_lock:
            if any(key in self._seen for key in keys):
                return False
            for key in keys:
                self._seen[key] = True
            while len(self._seen) > SEEN_KEPT:
                self._seen.popitem(last=False)
            return True

    def _run_handler(self, kind, payload):
        try:
            self.handle(kind, payload)
        except Exception as exc:  # a handler bug costs one envelope, never the connection
            self.log(f"handling a {kind} envelope failed: {type(exc).__name__}: {exc}")
