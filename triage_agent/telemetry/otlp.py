"""OTLP/HTTP export of one run's trace, JSON-encoded, configured the way every OpenTelemetry SDK is.

    POST {endpoint}/v1/traces   Content-Type: application/json, plus the configured headers
    body ExportTraceServiceRequest {resourceSpans: [{resource: {attributes},
                                                     scopeSpans: [{scope, spans: [...]}]}]}
    2xx                -> sent (a partialSuccess that names rejected spans is reported)
    429, 502, 503, 504 -> one retry, after Retry-After (seconds or an HTTP date) or a short
                          pause, when that still fits in the timeout
    anything else, or no answer in time -> one warning line; the run and its exit code are
                          unaffected

The environment, read once by `settings_from_env`:
    OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none   nothing is sent
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT   the full URL, used as it is
    OTEL_EXPORTER_OTLP_ENDPOINT          a base URL; /v1/traces is appended
    OTEL_EXPORTER_OTLP_[TRACES_]HEADERS  key=value,... (W3C baggage form, values URL-decoded);
                                         the traces variable replaces the general one
    OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT  milliseconds for the whole export, retry included
                                         (default 10000)
    OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL http/json is what is sent (http/protobuf is taken as
                                         a hint a collector's OTLP/HTTP port honours either
                                         way); grpc is a warning
    OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES   the resource (service.name, service.version)
    OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true   message content in the spans
With no endpoint set nothing is sent: a command-line tool does not knock on localhost:4318
uninvited (nor loads an HTTP client: _post imports it). Header values are never printed (they
often carry an API key).
"""

import json
import random
import time
import urllib.parse
from dataclasses import dataclass, field

from triage_agent import __version__
from triage_agent.telemetry import otel
from triage_agent.terminal import printable

SERVICE_NAME = "triage-agent"
DEFAULT_TIMEOUT_MS = 10_000
RETRY_STATUSES = (429, 502, 503, 504)   # the OTLP specification's retryable responses
CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


@dataclass
class ExportSettings:
    """What the environment asks for; `url` None means nothing is exported."""
    url: "str | None" = None
    headers: dict = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT_MS / 1000
    resource: dict = field(default_factory=lambda: {"service.name": SERVICE_NAME,
                                                    "service.version": __version__})
    capture_content: bool = False
    problems: list = field(default_factory=list)   # one line each, for stderr


def settings_from_env(environ) -> ExportSettings:
    """ExportSettings from OTEL_* variables; a bad value is a problem line, never an exception."""
    settings = ExportSettings(capture_content=environ.get(CAPTURE, "").strip().lower() == "true")
    settings.resource.update(_pairs(environ, "OTEL_RESOURCE_ATTRIBUTES", settings.problems,
                                    all_or_nothing=True))
    if environ.get("OTEL_SERVICE_NAME", "").strip():
        settings.resource["service.name"] = environ["OTEL_SERVICE_NAME"].strip()
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or \
            environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return settings
    settings.url = _endpoint(environ, settings.problems)
    name = _first_set(environ, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
    if settings.url and name and environ[name].strip() not in ("http/json", "http/protobuf"):
        # a collector takes both http encodings on its OTLP/HTTP port; gRPC is another port
        settings.problems.append(f"{name}={environ[name].strip()!r}: only OTLP/HTTP with JSON is"
                                 " spoken here; the endpoint must be the collector's OTLP/HTTP "
                                 "port (4318), not its gRPC one (4317)")
    name = _first_set(environ, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS")
    if name:
        settings.headers = _pairs(environ, name, settings.problems, header=True)
    name = _first_set(environ, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT")
    if name:
        try:
            settings.timeout = float(environ[name]) / 1000
            if not 0 < settings.timeout < 3600:
                raise ValueError
        except ValueError:
            settings.problems.append(f"{name}={environ[name]!r} is not a number of milliseconds"
                                     f"; using {DEFAULT_TIMEOUT_MS}")
            settings.timeout = DEFAULT_TIMEOUT_MS / 1000
    return settings


def _first_set(environ, *names):
    return next((name for name in names if environ.get(name, "").strip()), None)


def _endpoint(environ, problems):
    name = _first_set(environ, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                      "OTEL_EXPORTER_OTLP_ENDPOINT")
    if name is None:
        return None
    url = environ[name].strip()
    if name == "OTEL_EXPORTER_OTLP_ENDPOINT":   # a base URL: the signal's path goes after it
        url = url.rstrip("/") + "/v1/traces"
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problems.append(f"{name}: {where(url)!r} is not an http:// or https:// URL; "
                        "traces are not exported")
        return None
    return url


def _pairs(environ, name, problems, *, header=False, all_or_nothing=False) -> dict:
    """`key=value,key2=value2` with URL-decoded values; bad entries are problems."""
    pairs, bad = {}, []
    for item in filter(str.strip, environ.get(name, "").split(",")):
        key, sep, value = item.partition("=")
        key, value = key.strip(), urllib.parse.unquote(value.strip())
        if not sep or not key or (header and not _header_ok(key, value)):
            bad.append(key or item.strip())
            continue
        pairs[key] = value
    if bad:
        what = "ignored" if not all_or_nothing else "the whole variable is ignored"
        names = ", ".join(repr(b[:40]) for b in bad) if not header else f"{len(bad)} entry(s)"
        problems.append(f"{name}: malformed {names} ({what}; expected key=value,...)")
        if all_or_nothing:
            return {}
    return pairs


def _header_ok(key, value) -> bool:
    # a decoded value with a line break would smuggle a header in; http.client refuses it too
    return key.isascii() and all(c.isalnum() or c in "!#$%&'*+-.^_`|~" for c in key) and \
        not any(c in value for c in "\r\n\0")


def where(url) -> str:
    """The URL without user info or query, for a message a person reads."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else url[:80]


def exporter(settings, say) -> "callable | None":
    """The Recorder's exporter: sends a run's spans and says where they went (or why not) in
    one line through `say`; None when the environment asks for no export."""
    if not settings.url:
        return None

    def send(spans):
        if export(settings, spans, warn=say):
            say(f"trace {spans[-1].get('traceId')} exported to {where(settings.url)}")
    return send


def request_body(settings, spans) -> bytes:
    """The ExportTraceServiceRequest for `spans`, JSON-encoded."""
    body = {"resourceSpans": [{
        "resource": {"attributes": otel.attributes(settings.resource)},
        "scopeSpans": [{"scope": dict(otel.SCOPE), "spans": list(spans)}]}]}
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


def export(settings, spans, *, warn, sleep=time.sleep, clock=time.monotonic) -> bool:
    """Send the spans once (one retry when the collector asks for it); never raises."""
    if not settings.url or not spans:
        return False
    deadline = clock() + settings.timeout
    body = request_body(settings, spans)
    why = None
    for attempt in (1, 2):
        status, why, wait = _post(settings, body, deadline - clock())
        if status is not None and 200 <= status < 300:
            if why:
                warn(f"warning: the collector at {where(settings.url)} kept part of the trace"
                     f": {why}")
            return True
        if wait is None or attempt == 2:
            break
        if clock() + wait >= deadline:
            why += f"; it asked for a retry after {wait:g} s, past the export timeout"
            break
        sleep(wait)
    warn(f"warning: trace not exported to {where(settings.url)}: {why}; the run's outcome is"
         " unchanged")
    return False


def _post(settings, body, timeout):
    """One POST: (status or None, what went wrong or None, seconds to wait before a retry)."""
    import http.client
    import urllib.error
    import urllib.request
    headers = {**settings.headers, "Content-Type": "application/json"}
    request = urllib.request.Request(settings.url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=max(timeout, 0.001)) as response:
            return response.status, _partial(response.read(65536)), None
    except urllib.error.HTTPError as exc:
        detail = _snippet(exc.read(2048) if exc.fp else b"")
        why = f"HTTP {exc.code}" + (f" ({detail})" if detail else "")
        wait = _retry_after(exc.headers.get("Retry-After")) if exc.code in RETRY_STATUSES \
            else None
        return exc.code, why, wait
    except urllib.error.URLError as exc:
        return None, f"cannot connect ({exc.reason})", None
    except (TimeoutError, OSError, http.client.HTTPException, ValueError) as exc:
        return None, f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, None


def _retry_after(value) -> float:
    """Seconds to wait: the header's (seconds or an HTTP date), else a short jittered pause."""
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            import email.utils
            try:
                when = email.utils.parsedate_to_datetime(value).timestamp()
                return max(0.0, when - time.time())
            except (TypeError, ValueError):
                pass
    return 0.5 + random.random() / 2


def _partial(raw) -> "str | None":
    """What a 200 says was rejected (ExportTraceServiceResponse.partialSuccess), or None."""
    try:
        partial = json.loads(raw or b"{}").get("partialSuccess") or {}
        rejected = int(partial.get("rejectedSpans") or 0)
    except (ValueError, AttributeError, TypeError):
        return None
    message = _snippet(str(partial.get("errorMessage") or "").encode())
    if rejected:
        return f"{rejected} span(s) rejected" + (f" ({message})" if message else "")
    return message or None


def _snippet(raw) -> str:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    try:   # an OTLP error body is a google.rpc.Status: {"code", "message", "details"}
        text = str(json.loads(text).get("message") or text)
    except (ValueError, AttributeError):
        pass
    text = printable(" ".join(text.split()), keep_newlines=False)
    return text if len(text) <= 200 else text[:199] + "…"
