"""Raw-HTTP client for the Anthropic Messages API (stdlib urllib, no SDK).

One call is one POST of the loop's request as JSON, through a transport that says where it goes
and with which headers: gateway.py's `POST {base}/v1/messages` with a key or bearer token (the
hosted API, gateways, and with the `compatible` profile self-hosted servers: profiles.py),
bedrock.py's SigV4-signed InvokeModel, vertex.py's rawPredict with an access token. The
transport encodes the body once per call and prepares each attempt's URL and headers (a fresh
signature or token every time); a streamed answer is read by the transport (server-sent events,
or AWS event-stream frames carrying the same events) into one message.

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

from triage_agent.model import gateway, sse
from triage_agent.model.errors import ApiError

API_VERSION = gateway.API_VERSION
FALLBACK_BETA = gateway.FALLBACK_BETA
DEFAULT_BASE_URL = gateway.DEFAULT_BASE_URL
DEFAULT_TIMEOUT = 600.0  # seconds per socket operation; long non-streaming answers take minutes
DEFAULT_IDLE_TIMEOUT = 30.0  # streaming: seconds without a byte (an event or a ping) -> retry
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
MAX_RETRY_AFTER = 60.0
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
    """Callable model seam: `client(request_body) -> response_body` over HTTP with retries.

    `transport` says where and how (gateway.HttpTransport, bedrock.BedrockTransport,
    vertex.VertexTransport); without one, the hosted API or a gateway from the same options
    as HttpTransport's."""

    def __init__(self, *, api_key=None, base_url=DEFAULT_BASE_URL, fallbacks=True,
                 max_retries=2, timeout=DEFAULT_TIMEOUT, stream=False,
                 idle_timeout=DEFAULT_IDLE_TIMEOUT, first_byte_timeout=None,
                 profile="anthropic", auth_token=None, headers=None, transport=None,
                 on_stream=None, sleep=time.sleep, rand=random.random, on_retry=None):
        self.transport = transport or gateway.HttpTransport(
            api_key=api_key, base_url=base_url, profile=profile, auth_token=auth_token,
            fallbacks=fallbacks, headers=headers)
        self.url = getattr(self.transport, "url", "")
        self.max_retries = max(0, int(max_retries))
        self.timeout = timeout
        self.stream = stream
        self.idle_timeout = idle_timeout
        self.first_byte_timeout = first_byte_timeout or idle_timeout
        self._sleep = sleep
        self._rand = rand
        self._on_retry = on_retry  # on_retry(attempt, delay_seconds, error): progress lines
        self._on_stream = on_stream  # on_stream(meaning): each event's meaning (sse.py)
        self.last_request_id = None
        self._started = False
        self.retries = 0  # total retries over the client's life, for the outcome

    def __call__(self, request_body: dict) -> dict:
        """Send one Messages request; return the response message or raise ApiError."""
        self.transport.check()
        # on the wire only: records and replay see the loop's request unchanged
        request_body = self.transport.encode(request_body, self.stream)
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
        self.url, headers = self.transport.prepare(data, self.stream)  # signed or token fresh
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        wait = self.first_byte_timeout if self.stream else self.timeout
        status, rid = None, None  # known once the response has started
        self._started = False     # streaming: the first byte of the body has come
        try:
            with urllib.request.urlopen(request, timeout=wait) as response:
                headers = _lower(response.headers)
                status, rid = 200, headers.get(self.transport.request_id_header)
                self.last_request_id = rid
                if headers.get("content-type", "").startswith(self.transport.stream_types):
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
        return self._parse_message(body, rid)

    def _read_stream(self, response, rid) -> dict:
        """The streamed answer as one message; a stream that fails is retryable (sse.py)."""
        try:
            message = self.transport.read_stream(
                response, on_event=self._tell, on_first_chunk=lambda: self._first_byte(response))
        except sse.StreamError as exc:
            error = ApiError(200, exc.error_type, f"{exc.message} (in the event stream)", rid)
            if exc.error_type in NOT_RETRIED_IN_STREAM:
                raise error from None
            raise _Retryable(error) from None
        if message.get("type") != "message":   # the same check as a plain answer's
            raise ApiError(200, "invalid_response", "the API streamed something that is not a"
                           f" message: {gateway.snippet(json.dumps(message).encode())}", rid)
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
        error_type, message, rid = self.transport.error_fields(status, headers, body)
        error = ApiError(status, error_type, message,
                         headers.get(self.transport.request_id_header) or rid)
        self.last_request_id = error.request_id
        if _should_retry(status, headers):
            return _Retryable(error, headers)
        return error

    def _parse_message(self, body: bytes, rid) -> dict:
        try:
            message = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ApiError(200, "invalid_response", "the API answered 200 but the body is"
                           f" not JSON: {gateway.snippet(body)}", rid) from None
        if not isinstance(message, dict) or message.get("type") != "message" \
                or not isinstance(message.get("content"), list):
            raise ApiError(200, "invalid_response", "the API answered 200 but the body is"
                           f" not a message object: {gateway.snippet(body)}", rid)
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
