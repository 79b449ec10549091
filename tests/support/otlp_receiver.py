"""A real OTLP/HTTP receiver for tests, and a checker for what it receives.

`Receiver` is a stdlib ThreadingHTTPServer on 127.0.0.1:0 that records every request (path,
headers with lowercase names, parsed JSON body) and answers from a script of (status, headers,
body) replies, then 200. The CLI exports before it exits, so a test reads `.requests` once the
process has ended: nothing is waited for.

`request_problems(body)` checks an ExportTraceServiceRequest in OTLP/JSON as a receiver would
parse it: lowerCamelCase fields, hex ids of the right length, decimal-string nanosecond times,
integer enums, typed AnyValues with no null and no empty array. `attrs(obj)` decodes an
attribute list into a plain dict.
"""

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fixtures.http_thread import ServerThread

HEX = {16: re.compile(r"[0-9a-f]{32}"), 8: re.compile(r"[0-9a-f]{16}")}
DIGITS = re.compile(r"[0-9]+")
VALUE_KEYS = {"stringValue": str, "intValue": str, "doubleValue": (int, float),
              "boolValue": bool, "arrayValue": dict}


class Receiver:
    """OTLP/HTTP collector stand-in; `.url` is its base URL, `.requests` what arrived."""

    def __init__(self, replies=()):
        self.replies = list(replies)
        self.requests = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                sent = {name.lower(): value for name, value in self.headers.items()}
                # recorded before the reply: once the client has its answer, the test may look
                with receiver._lock:
                    receiver.requests.append({"path": self.path, "headers": sent,
                                              "body": body, "raw": raw})
                    status, headers, reply = receiver.replies.pop(0) if receiver.replies else \
                        (200, {}, b"{}")
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.serving = ServerThread(self.server, name="otlp-receiver")

    def __enter__(self):
        self.serving.start()
        return self

    def __exit__(self, *exc):
        self.serving.stop()


def spans_of(body):
    """Every span of an ExportTraceServiceRequest, in order."""
    return [span for rs in body["resourceSpans"] for ss in rs["scopeSpans"]
            for span in ss["spans"]]


def decode(value):
    """A Python value from one OTLP/JSON AnyValue."""
    (kind, inner), = value.items()
    if kind == "intValue":
        return int(inner)
    if kind == "arrayValue":
        return [decode(item) for item in inner.get("values", [])]
    return inner


def attrs(obj):
    """{key: value} of an object's OTLP attribute list (a span, a resource, an event)."""
    return {item["key"]: decode(item["value"]) for item in obj.get("attributes", [])}


def value_problems(value, where):
    if not isinstance(value, dict) or len(value) != 1 or next(iter(value)) not in VALUE_KEYS:
        return [f"{where}: not an AnyValue with exactly one typed field: {value!r}"]
    (kind, inner), = value.items()
    if inner is None or not isinstance(inner, VALUE_KEYS[kind]) or \
            (kind == "intValue" and not re.fullmatch(r"-?[0-9]+", inner)):
        return [f"{where}: {kind} holds {inner!r}"]
    if kind == "arrayValue":
        items = inner.get("values")
        if not items:
            return [f"{where}: empty array"]
        return [p for i, item in enumerate(items) for p in value_problems(item, f"{where}[{i}]")]
    return []


def attribute_problems(items, where):
    if not isinstance(items, list):
        return [f"{where}.attributes: not a list"]
    problems = []
    for item in items:
        if not isinstance(item, dict) or set(item) != {"key", "value"} or \
                not isinstance(item["key"], str):
            problems.append(f"{where}: attribute {item!r} is not {{key, value}}")
            continue
        problems += value_problems(item["value"], f"{where}.{item['key']}")
    keys = [item.get("key") for item in items if isinstance(item, dict)]
    problems += [f"{where}: attribute {k} twice" for k in set(keys) if keys.count(k) > 1]
    return problems


def span_problems(span, where):
    problems = []
    for field, size in (("traceId", 16), ("spanId", 8)):
        if not HEX[size].fullmatch(str(span.get(field))):
            problems.append(f"{where}.{field}: {span.get(field)!r} is not {size * 2} hex")
    if "parentSpanId" in span and not HEX[8].fullmatch(str(span["parentSpanId"])):
        problems.append(f"{where}.parentSpanId: {span['parentSpanId']!r}")
    if not isinstance(span.get("name"), str) or not span["name"]:
        problems.append(f"{where}.name: missing")
    if not isinstance(span.get("kind"), int) or isinstance(span.get("kind"), bool) or \
            not 0 <= span["kind"] <= 5:
        problems.append(f"{where}.kind: {span.get('kind')!r} is not an integer enum")
    times = [span.get("startTimeUnixNano"), span.get("endTimeUnixNano")]
    if not all(isinstance(t, str) and DIGITS.fullmatch(t) for t in times):
        problems.append(f"{where}: times {times!r} are not decimal strings")
    elif int(times[1]) < int(times[0]):
        problems.append(f"{where}: ends before it starts")
    status = span.get("status", {})
    if not isinstance(status.get("code", 0), int) or status.get("code", 0) not in (0, 1, 2):
        problems.append(f"{where}.status: {status!r}")
    problems += attribute_problems(span.get("attributes", []), where)
    for i, event in enumerate(span.get("events", [])):
        problems += attribute_problems(event.get("attributes", []), f"{where}.events[{i}]")
    return problems


def request_problems(body):
    """What stops `body` from parsing as an OTLP/JSON ExportTraceServiceRequest; [] when fine."""
    if not isinstance(body, dict) or not isinstance(body.get("resourceSpans"), list):
        return ["no resourceSpans list"]
    problems = []
    for r, resource_spans in enumerate(body["resourceSpans"]):
        where = f"resourceSpans[{r}]"
        problems += attribute_problems(resource_spans.get("resource", {}).get("attributes"),
                                       f"{where}.resource")
        for s, scope_spans in enumerate(resource_spans.get("scopeSpans") or [None]):
            if not isinstance(scope_spans, dict) or not isinstance(scope_spans.get("spans"),
                                                                   list):
                problems.append(f"{where}.scopeSpans[{s}]: no spans list")
                continue
            for n, span in enumerate(scope_spans["spans"]):
                problems += span_problems(span, f"{where}.scopeSpans[{s}].spans[{n}]")
    return problems
