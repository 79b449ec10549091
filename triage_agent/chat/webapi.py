"""The Slack Web API over HTTPS, and the queue that keeps a slow or down Slack off every run.

    POST {api_url}{method}   Authorization: Bearer TOKEN, a JSON body (UTF-8)
    200 {"ok": true, ...} | 200 {"ok": false, "error": "..."} | 429 + Retry-After | 5xx

`WebApi.call` makes one request: the answer, or a `SlackApiError` that says whether trying again
can help and after how long (a 429's Retry-After, in seconds). `Poster` owns one thread and a
bounded queue of calls: each is tried in order, again after the Retry-After Slack asks for or
after a backoff with jitter, up to `attempts` times; a call that keeps failing, or finds the queue
full, is dropped and counted. Every failed try is counted too (`failures`, shown in /metrics as
triage_slack_failures_total). Calls run in the order they were queued, so a reply in a thread
never overtakes the message that starts it. The token is sent only in the Authorization header
and appears in no error, log line or record.
"""

import json
import random
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque

# errors Slack answers with ok:false that a later try can get past
RETRYABLE = {"ratelimited", "internal_error", "fatal_error", "service_unavailable",
             "request_timeout"}
MAX_ANSWER_BYTES = 1 << 20


class SlackApiError(Exception):
    """One Web API call failed: `error` (Slack's code or the HTTP status), `retryable`, and the
    seconds Slack asked us to wait (`retry_after`, or None)."""

    def __init__(self, method, error, *, retryable, retry_after=None):
        super().__init__(f"{method}: {error}")
        self.method, self.error = method, error
        self.retryable, self.retry_after = retryable, retry_after


class WebApi:
    """One token's calls to one Slack API base URL."""

    def __init__(self, api_url, token, *, timeout=10.0):
        self.api_url = api_url if api_url.endswith("/") else api_url + "/"
        self._token = token
        self.timeout = timeout

    def __repr__(self):  # the token never shows, not even in a traceback's locals
        return f"WebApi({self.api_url!r})"

    def call(self, method, payload=None) -> dict:
        """Slack's answer to one call, or SlackApiError."""
        request = urllib.request.Request(
            self.api_url + method, data=json.dumps(payload or {}).encode("utf-8"),
            method="POST", headers={"Content-Type": "application/json; charset=utf-8",
                                    "Authorization": f"Bearer {self._token}"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read(MAX_ANSWER_BYTES + 1)
        except urllib.error.HTTPError as exc:
            exc.close()
            retry_after = _seconds(exc.headers.get("Retry-After")) if exc.headers else None
            raise SlackApiError(method, f"HTTP {exc.code}", retry_after=retry_after,
                                retryable=exc.code == 429 or exc.code >= 500) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise SlackApiError(method, f"unreachable ({reason})", retryable=True) from None
        try:
            answer = json.loads(body)
        except ValueError:
            raise SlackApiError(method, "an answer that is not JSON", retryable=True) from None
        if not isinstance(answer, dict):
            raise SlackApiError(method, "an answer that is not a JSON object", retryable=True)
        if not answer.get("ok"):
            error = str(answer.get("error") or "ok is not true")[:200]
            raise SlackApiError(method, error, retryable=error in RETRYABLE)
        return answer


def _seconds(value):
    try:
        return max(0.0, min(float(value), 300.0))
    except (TypeError, ValueError):
        return None


class Poster:
    """Web API calls from one thread, in order, retried; never blocks the caller."""

    def __init__(self, api, *, size=500, attempts=5, delay=0.5, max_delay=30.0,
                 rng=random.random, log=None):
        self.api, self.size, self.attempts = api, size, attempts
        self.delay, self.max_delay, self.rng = delay, max_delay, rng
        self.log = log or (lambda text: print(f"triage-agent serve: slack: {text}",
                                              file=sys.stderr, flush=True))
        self.failures = 0   # failed tries (each a triage_slack_failures_total)
        self.dropped = 0    # calls given up on (attempts spent, not retryable, or queue full)
        self._queue = deque()
        self._lock = threading.Condition()
        self._busy = self._closing = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, name="slack-poster", daemon=True)
        self._thread.start()

    def submit(self, method, payload, then=None) -> bool:
        """Queue one call; `payload` may be a callable, asked for the body (or a (method, body)
        pair, or None for nothing) when the call is made, so a reply in a thread finds the
        thread's ts once it exists; then(answer) after success. False (and counted) when the
        queue is full."""
        with self._lock:
            if self._closing or len(self._queue) >= self.size:
                self.dropped += 1
                self.failures += 1
                self.log(f"{method} dropped: the queue of {self.size} calls is full")
                return False
            self._queue.append((method, payload, then))
            self._lock.notify_all()
        return True

    def _work(self):
        while True:
            with self._lock:
                while not self._queue and not self._closing:
                    self._lock.wait()
                if not self._queue:
                    return
                item, self._busy = self._queue.popleft(), True
            try:
                self._send(*item)
            except Exception as exc:  # a bad payload builder costs its call, never the thread
                self.log(f"{item[0]} not sent: {type(exc).__name__}: {exc}")
            finally:
                with self._lock:
                    self._busy = False
                    self._lock.notify_all()

    def _send(self, method, payload, then):
        body = payload() if callable(payload) else payload
        if body is None:  # the builder says there is nothing to send any more
            return
        if isinstance(body, tuple):  # the builder chose another method (post, not update)
            method, body = body
        for attempt in range(1, self.attempts + 1):
            try:
                answer = self.api.call(method, body)
            except SlackApiError as exc:
                with self._lock:
                    self.failures += 1
                if not exc.retryable or attempt == self.attempts:
                    with self._lock:
                        self.dropped += 1
                    self.log(f"{method} failed after {attempt} tries: {exc.error}")
                    return
                wait = exc.retry_after
                if wait is None:  # full jitter on an exponential backoff
                    wait = self.rng() * min(self.max_delay, self.delay * 2 ** (attempt - 1))
                if self._stop.wait(wait):
                    self.log(f"{method} not retried: serve is stopping")
                    with self._lock:
                        self.dropped += 1
                    return
                continue
            if then is not None:
                then(answer)
            return

    def wait_idle(self, timeout) -> bool:
        """True once every queued call has been made (or dropped)."""
        end = time.monotonic() + timeout
        with self._lock:
            while self._queue or self._busy:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
            return True

    def close(self, grace=10.0):
        """Let queued calls go out for up to `grace` seconds, then stop retrying."""
        self.wait_idle(grace)
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        self._stop.set()
        self._thread.join(grace + 1)
