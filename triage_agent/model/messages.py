"""Raw-HTTP client for the Anthropic Messages API (stdlib urllib, no SDK).

One call is one `POST {base}/v1/messages` with a JSON body (plus `"stream": true` when
streaming) and these headers:

    x-api-key: KEY                         anthropic-version: 2026-10-21
    content-type: application/json         anthropic-beta: server-side-fallback-2026-07-01
                                                            (only when fallbacks are on)
    authorization: Bearer TOKEN            (with an auth token, for servers that take one)

With the `compatible` profile (profiles.py: llama-server, Ollama, vLLM, LiteLLM) the body is
cut down to what those servers understand and no beta header is sent; no key is needed.

    attempt ──> 200 + message JSON ──────────────────────────> return the body (dict)
        │   ├─> 200 + event stream ── message_stop ───────────> the assembled message (sse.py)
        │   │        └─ error event / dropped / silent / no message_stop / bad tool JSON
        │   │                       ── retries left ─> sleep, attempt again (nothing partial
        │   │                       └─ none left ──> ApiError(200, ...)   reached the loop)
        │   └─> 200 + anything else ─────────────────────────> ApiError(200, invalid_response)
        ├─> 4xx/5xx ── retryable? ── yes, retries left ──> sleep, attempt again
        │                         └─ no / none left ─────────> ApiError(status, error.type, ...)
        └─> refused / reset / dropped / timeout ── retries left ─> sleep, attempt again
                                                └─ none left ─> ApiError(None, connection_error
                                                                          | timeout_error)

Retryable, as the official SDKs do it: an `x-should-retry: true|false` header decides when
present; otherwise 408, 409, 429 and every 5xx (529 overloaded included). The wait is
`retry-after-ms` or `retry-after` (seconds) when the server gives one of at most 60 s, else
exponential backoff from 0.5 s doubling to at most 8 s, minus up to 25 % jitter.
Errors arrive as `{"type": "error", "error": {"type", "message"}, "request_id"}` with a
`request-id` header; both ids are kept so an operator can quote them, a failed stream's too.
Self-hosted servers may leave out the top-level type (llama-server: `{"error": {"code",
"message", "type"}}`) or send `{"error": "text"}`; their known types (a prompt past the context
size, a model still loading: 503, retried like an overload) are said in the operator's words.

Timeouts: without streaming one socket operation may take `timeout` (600 s: the whole answer
is one read). Streaming, the wait for the first byte of the answer is `first_byte_timeout` (a
local server on a CPU sends nothing until it has read the whole prompt; by default the idle
timeout), then the same socket timeout becomes an idle timeout, `idle_timeout` seconds without
a byte (pings are bytes), so a dead connection is noticed in seconds.
"""

import email.utils
import http.client
import json
import random
import socket
import time
import urllib.error
import urllib.request

from triage_agent.model import profiles, sse
from triage_agent.model.errors import ApiError

API_VERSION = "2026-10-21"
FALLBACK_BETA = "server-side-fallback-2026-07-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_TIMEOUT = 600.0  # seconds per socket operation; long non-streaming answers take minutes
DEFAULT_IDLE_TIMEOUT = 30.0  # streaming: seconds without a byte (an event or a ping) -> retry
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
USER_AGENT = "triage-agent/0.1 (python-urllib)"
# error events in a stream that sending the request again cannot fix (their HTTP twins are 4xx)
NOT_RETRIED_IN_STREAM = ("invalid_request_error", "authentication_error", "permission_error",
                         "not_found_error", "request_too_large")


class _Retryable(Exception):
    """One failed attempt that may be retried; carries the error and the response headers."""

    def __init__(self, error, headers=None):
        super().__init__(str(error))
        self.error = error
        self.headers = headers or {}


class MessagesClient:
    """Callable model seam: `client(request_body) -> response_body` over HTTP with retries."""

    def __init__(self, *, api_key, base_url=DEFAULT_BASE_URL, fallbacks=True, max_retries=2,
                 timeout=DEFAULT_TIMEOUT, stream=False, idle_timeout=DEFAULT_IDLE_TIMEOUT,
                 first_byte_timeout=None, profile="anthropic", auth_token=None,
                 on_stream=None, sleep=time.sleep, rand=random.random, on_retry=None):
        if profile not in profiles.PROFILES:
            raise ValueError(f"unknown API profile {profile!r}")
        self.url = (base_url or DEFAULT_BASE_URL).rstrip("/") + "/v1/messages"
        self.profile = profile
        self.fallbacks = fallbacks and profile == "anthropic"
        self.max_retries = max(0, int(max_retries))
        self.timeout = timeout
        self.stream = stream
        self.idle_timeout = idle_timeout
        self.first_byte_timeout = first_byte_timeout or idle_timeout
        self._api_key, self._auth_token = api_key, auth_token
        self._sleep = sleep
        self._rand = rand
        self._on_retry = on_retry  # on_retry(attempt, delay_seconds, error): progress lines
        self._on_stream = on_stream  # on_stream(meaning): each event's meaning (sse.py)
        self.last_request_id = None
        self._started = False
        self.retries = 0  # total retries over the client's life, for the outcome

    def _headers(self) -> dict:
        """The request headers (the key included; never log this dict)."""
        headers = {"x-api-key": self._api_key or "", "anthropic-version": API_VERSION,
                   "content-type": "application/json", "accept": "application/json",
                   "user-agent": USER_AGENT}
        if not self._api_key and (self._auth_token or self.profile != "anthropic"):
            del headers["x-api-key"]   # a bearer token, or a server that takes no key
        if self._auth_token:
            headers["authorization"] = f"Bearer {self._auth_token}"
        if self.fallbacks:
            headers["anthropic-beta"] = FALLBACK_BETA
        return headers

    def __call__(self, request_body: dict) -> dict:
        """Send one Messages request; return the response message or raise ApiError."""
        if not self.url.startswith(("http://", "https://")):
            raise ApiError(None, "invalid_url", f"the API base URL must start with http:// or"
                           f" https:// (got {self.url[:-len('/v1/messages')]!r})")
        if self.profile == "compatible":  # on the wire only, like stream: records see the loop's
            request_body = profiles.compatible_request(request_body)
        if self.stream:  # the loop's request stays as it is: records and replay see no change
            request_body = dict(request_body, stream=True)
        try:
            data = json.dumps(request_body, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise ApiError(None, "invalid_request", f"request body is not JSON: {exc}") from None
        attempt = 0
        while True:
            try:
                return self._attempt(data)
            except _Retryable as failed:
                if attempt >= self.max_retries:
                    raise failed.error from None
                delay = self._delay(attempt, failed.headers)
                attempt += 1
                self.retries += 1
                if self._on_retry is not None:
                    self._on_retry(attempt, delay, failed.error)
                self._sleep(delay)

    def _attempt(self, data: bytes) -> dict:
        request = urllib.request.Request(self.url, data=data, headers=self._headers(),
                                         method="POST")
        wait = self.first_byte_timeout if self.stream else self.timeout
        status, rid = None, None  # known once the response has started
        self._started = False     # streaming: the first byte of the body has come
        try:
            with urllib.request.urlopen(request, timeout=wait) as response:
                headers = _lower(response.headers)
                status, rid = 200, headers.get("request-id")
                self.last_request_id = rid
                if headers.get("content-type", "").startswith("text/event-stream"):
                    return self._read_stream(response, rid)
                body = response.read()
        except urllib.error.HTTPError as exc:
            headers = _lower(exc.headers)
            try:
                body = exc.read()
            except (OSError, http.client.HTTPException):
                body = b""
            finally:
                exc.close()
            raise self._status_error(exc.code, headers, body) from None
        except (TimeoutError, socket.timeout) as exc:
            raise _Retryable(ApiError(status, "timeout_error", self._silence(status, exc),
                                      rid)) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise _Retryable(ApiError(None, "timeout_error",
                                          self._silence(None, exc.reason))) from None
            raise _Retryable(ApiError(None, "connection_error",
                                      f"cannot reach {self.url}: {exc.reason}")) from None
        except (ValueError, http.client.InvalidURL) as exc:  # configuration, not a retry case
            raise ApiError(None, "invalid_url", f"cannot use {self.url!r}: {exc}") from None
        except (OSError, http.client.HTTPException) as exc:
            # reset, RemoteDisconnected, IncompleteRead: the connection broke mid-exchange
            raise _Retryable(ApiError(status, "connection_error",
                                      f"connection to {self.url} broke:"
                                      f" {type(exc).__name__}: {exc}", rid)) from None
        return self._parse_message(body, headers)

    def _read_stream(self, response, rid) -> dict:
        """The streamed answer as one message; a stream that fails is retryable (sse.py)."""
        try:
            message = sse.read_message(response, on_event=self._tell,
                                       on_first_chunk=lambda: self._first_byte(response))
        except sse.StreamError as exc:
            error = ApiError(200, exc.error_type, f"{exc.message} (in the event stream)", rid)
            if exc.error_type in NOT_RETRIED_IN_STREAM:
                raise error from None
            raise _Retryable(error) from None
        if message.get("type") != "message":   # the same check as a plain answer's
            raise ApiError(200, "invalid_response", "the API streamed something that is not a"
                           f" message: {_snippet(json.dumps(message).encode())}", rid)
        return message

    def _first_byte(self, response):
        """After the first byte the stream's socket waits `idle_timeout`, not the first-byte
        wait (the socket under http.client's buffered reader)."""
        self._started = True
        sock = getattr(getattr(getattr(response, "fp", None), "raw", None), "_sock", None)
        if sock is not None and self.first_byte_timeout != self.idle_timeout:
            sock.settimeout(self.idle_timeout)

    def _tell(self, meaning):
        if self._on_stream is not None:
            try:
                self._on_stream(meaning)
            except Exception:  # a status line that cannot be drawn must not fail the call
                pass

    def _silence(self, status, exc) -> str:
        if not self.stream:
            return f"no answer within {self.timeout:g} s ({exc})"
        if self._started or self.first_byte_timeout == self.idle_timeout:
            if status is not None:
                return f"the event stream was silent for {self.idle_timeout:g} s ({exc})"
            return f"no answer within {self.idle_timeout:g} s ({exc})"
        return (f"no first byte of an answer within {self.first_byte_timeout:g} s ({exc}); a "
                "slow model server needs a longer --first-byte-timeout")

    def _status_error(self, status, headers, body):
        error_type, message, rid = _error_fields(status, body)
        message = profiles.server_words(error_type, message) or message
        error = ApiError(status, error_type, message, headers.get("request-id") or rid)
        self.last_request_id = error.request_id
        if _should_retry(status, headers):
            return _Retryable(error, headers)
        return error

    def _parse_message(self, body: bytes, headers: dict) -> dict:
        rid = headers.get("request-id")
        try:
            message = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ApiError(200, "invalid_response", "the API answered 200 but the body is"
                           f" not JSON: {_snippet(body)}", rid) from None
        if not isinstance(message, dict) or message.get("type") != "message" \
                or not isinstance(message.get("content"), list):
            raise ApiError(200, "invalid_response", "the API answered 200 but the body is"
                           f" not a message object: {_snippet(body)}", rid)
        return message

    def _delay(self, attempt: int, headers: dict) -> float:
        asked = _retry_after(headers)
        if asked is not None and 0 < asked <= MAX_RETRY_AFTER:
            return asked
        backoff = min(INITIAL_RETRY_DELAY * 2 ** attempt, MAX_RETRY_DELAY)
        return max(0.0, backoff * (1 - 0.25 * self._rand()))


def _lower(headers) -> dict:
    return {str(k).lower(): str(v) for k, v in (headers.items() if headers else [])}


def _should_retry(status: int, headers: dict) -> bool:
    verdict = headers.get("x-should-retry", "").strip().lower()
    if verdict in ("true", "false"):
        return verdict == "true"
    return status in (408, 409, 429) or status >= 500


def _retry_after(headers: dict):
    """Seconds the server asked us to wait, or None."""
    try:
        return float(headers["retry-after-ms"]) / 1000
    except (KeyError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        return None if parsed is None else float(email.utils.mktime_tz(parsed) - time.time())


def _error_fields(status: int, body: bytes):
    """(error.type, message, body request_id) from an error body, tolerating non-JSON."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        error = data["error"]   # the API's envelope, or llama-server's {"error": {code, ...}}
        rid = data.get("request_id") if isinstance(data.get("request_id"), str) else None
        return (str(error.get("type") or f"http_{status}"),
                str(error.get("message") or "(no message)"), rid)
    if isinstance(data, dict) and isinstance(data.get("error"), str) and data["error"].strip():
        return f"http_{status}", _snippet(data["error"].encode("utf-8")), None  # Ollama's own
    return f"http_{status}", _snippet(body) or "(empty body)", None


def _snippet(body: bytes, limit=200) -> str:
    text = body.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + "..."
