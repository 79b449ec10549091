"""Run records: the price table and cost, the audit log, and the trace.

- cost: `cost_usd(model, usage)` prices one response's `usage` from `PRICES` (USD per million
  tokens, taken `PRICES_TAKEN`); an unknown model prices as None, never as a guess. When a
  server-side fallback ran, `usage.iterations` holds per-model entries and each is priced by its
  own model. `Usage` adds responses up for the outcome; `cost_line` is the one line at the end;
  `money` rounds a USD amount wherever one is printed or serialized.
- audit: `Recorder.audit(**fields)` stamps the time and the run's trace id, appends one JSONL
  line to the audit file (flushed per entry) and prints one human line to stderr.
- trace: `Recorder.trace(draft)` turns a span draft (otel.model_call_span / otel.tool_span) into
  an OpenTelemetry span of the run's trace and appends it to the trace file as one JSONL line in
  the OTLP/JSON span shape; `Recorder.finish(outcome)` ends the root span, writes it, and hands
  every span to the `exporter` (OTLP/HTTP, otlp.py) once.

Record writing never ends a run: a failing audit file or trace file is disabled with one
warning on stderr, and the run goes on (the audit lines still reach stderr); a failed export is
one warning line. The audit file is a safety record and fails closed: one that cannot be opened
raises OSError from `Recorder()` (the run must not start), and once a write has failed
`audit_error` says why, so the action gate refuses to run anything for the rest of the run.
"""

import datetime
import json
import math
import re
import sys
import time
from dataclasses import dataclass

from mcp_kubectl_server.redact import redact

from triage_agent.telemetry import otel
from triage_agent.telemetry.otel import model_call_span, tool_span  # noqa: F401  the loop's span drafts
from triage_agent.terminal import printable, shorten

PRICES_TAKEN = "2026-11"


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""
    input: float
    cache_write: float  # 5-minute cache write
    cache_read: float
    output: float


_OPUS_45_UP = Price(5, 6.25, 0.50, 25)
# (model family pattern, price). A model id matches when it is the family name, optionally
# followed by a date (`-20251001` or Vertex-style `@20251001`); anything else is unknown.
# Source: Anthropic's pricing page, platform.claude.com/docs/en/about-claude/pricing, read
# 2026-11. It lists Opus 4.5 to 4.8 at 5 / 6.25 / 0.50 / 25 but Opus 4.1 and Opus 4 (retired
# except on Bedrock / Google Cloud) at 15 / 18.75 / 1.50 / 75, so "Opus 4.x" in the issue holds
# for 4.5 and later only.
PRICES = (
    ("claude-opus-5-5", Price(4, 5, 0.20, 20)),
    ("claude-sonnet-5-5", Price(2, 2.5, 0.20, 10)),
    ("claude-sonnet-5", Price(2, 2.5, 0.20, 10)),
    ("claude-opus-5", _OPUS_45_UP),
    ("claude-opus-4-[5-9]", _OPUS_45_UP),
    ("claude-opus-4(?:-1)?", Price(15, 18.75, 1.50, 75)),
    ("claude-haiku-4-5", Price(1, 1.25, 0.10, 5)),
)
_PRICE_PATTERNS = tuple((re.compile(f"(?:{family})(?:[-@][0-9]{{8}})?"), price)
                        for family, price in PRICES)


def price_for(model) -> "Price | None":
    """The price of `model`, or None when the model is not in the table."""
    if not isinstance(model, str):
        return None
    for pattern, price in _PRICE_PATTERNS:
        if pattern.fullmatch(model.strip()):
            return price
    return None


def _tokens(usage: dict):
    """(input, cache_write, cache_read, output) from one usage dict; None if malformed."""
    counts = []
    for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                "output_tokens"):
        value = usage.get(key) or 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return None
        counts.append(value)
    return tuple(counts)


def _price_one(model, usage) -> "float | None":
    price = price_for(model)
    counts = _tokens(usage) if isinstance(usage, dict) else None
    if price is None or counts is None:
        return None
    fresh, write, read, out = counts
    return (fresh * price.input + write * price.cache_write + read * price.cache_read
            + out * price.output) / 1_000_000


def cost_usd(model, usage) -> "float | None":
    """USD for one response's usage; None when any part of it cannot be priced."""
    if not isinstance(usage, dict):
        return None
    iterations = usage.get("iterations")
    if isinstance(iterations, list) and iterations:
        total = 0.0
        for entry in iterations:
            if not isinstance(entry, dict):
                return None
            part = _price_one(entry.get("model") or model, entry)
            if part is None:
                return None
            total += part
        return total
    return _price_one(model, usage)


@dataclass
class Usage:
    """Token totals by kind over a run, and their cost (None once anything was unpriced)."""
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost: "float | None" = 0.0

    def add(self, model, usage) -> "float | None":
        """Add one response's usage; returns that response's cost."""
        counts = _tokens(usage) if isinstance(usage, dict) else None
        if counts is not None:
            self.input += counts[0]
            self.cache_write += counts[1]
            self.cache_read += counts[2]
            self.output += counts[3]
        cost = cost_usd(model, usage)
        self.cost = None if cost is None or self.cost is None else self.cost + cost
        return cost

    def as_dict(self) -> dict:
        """The token totals without the cost (the outcome's `usage`)."""
        return {"input": self.input, "output": self.output, "cache_read": self.cache_read,
                "cache_write": self.cache_write}


def money(usd) -> "float | None":
    """A USD amount rounded to a millionth of a dollar (no float noise in tickets); None stays."""
    return round(usd, 6) if isinstance(usd, (int, float)) and not isinstance(usd, bool) else None


def cost_line(model, usage) -> str:
    """The one human line at the end of a run: a Usage's tokens by kind and USD (or why not)."""
    tokens = (f"input {usage.input:,} · cache write {usage.cache_write:,}"
              f" · cache read {usage.cache_read:,} · output {usage.output:,}")
    money = f"${usage.cost:.4f} (prices of {PRICES_TAKEN})" if usage.cost is not None else \
        f"$ unknown (no price for {model!r} in the table of {PRICES_TAKEN})"
    return f"cost: {model} · tokens: {tokens} · {money}"


# --- audit and trace --------------------------------------------------------------------------

def _printable(value, limit) -> str:
    """One safe line: no newlines, terminal escapes or bidi overrides from model-supplied text."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                            default=str)
    return shorten(printable(redact(text), keep_newlines=False), limit)   # redact, then cut


def strict_json(value):
    """`value` with NaN and infinities (a model's arguments may carry them; Python's json writes
    them, strict readers reject them) as text, so records and the outcome stay strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    return value


def audit_line(entry: dict) -> str:
    """The human summary of one audit entry, e.g.
    `[audit] step 2 · get_logs namespace=prod name=web-1 · executed · 812 bytes`."""
    parts = [f"[audit] step {entry.get('step', '?')}", _printable(entry.get("tool", "?"), 64)]
    args = entry.get("arguments")
    if isinstance(args, dict) and args:
        parts[-1] += " " + " ".join(f"{_printable(k, 32)}={_printable(v, 60)}"
                                    for k, v in args.items())
    elif args not in (None, {}):
        parts[-1] += " " + _printable(args, 80)
    if "decision" in entry:
        parts.append(_printable(entry["decision"], 80))
    if entry.get("is_error"):
        parts.append("error")
    if isinstance(entry.get("bytes"), int):
        parts.append(f"{entry['bytes']} bytes")
    if entry.get("error"):  # a failed tool's own first line: the cause, not only its size
        parts.append(_printable(entry["error"], 160))
    skip = {"time", "trace_id", "step", "tool", "arguments", "decision", "is_error", "bytes",
            "error"}
    parts.extend(f"{_printable(k, 32)}={_printable(v, 80)}" for k, v in entry.items()
                 if k not in skip)
    return _printable(" · ".join(parts), 400)


class _JsonlFile:
    """An append-only JSONL file that disables itself (with one warning) on the first error."""

    def __init__(self, path, what, warn, *, must_open=False, consequence="disabled"):
        self.what, self._warn, self._file = what, warn, None
        self.consequence, self.failure = consequence, None
        if path is None:
            return
        try:
            self._file = open(path, "a", encoding="utf-8")
        except OSError as exc:
            if must_open:
                raise
            self._fail(exc)

    def write(self, record) -> bool:
        if self._file is None:
            return False
        try:
            line = json.dumps(strict_json(record), ensure_ascii=False, default=str,
                              allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:  # keep the file, note the entry
            line = json.dumps({"unserialisable_record": f"{type(exc).__name__}: {exc}",
                               "repr": _printable(repr(record), 2000)})
        try:
            self._file.write(line + "\n")
            self._file.flush()
            return True
        except Exception as exc:  # disk full, closed file, I/O error, ...
            self._fail(exc)
            return False

    def _fail(self, exc):
        self.failure = f"cannot write the {self.what} ({type(exc).__name__}: {exc})"
        self._warn(f"warning: {self.failure}; {self.what} {self.consequence} for the rest of "
                   "this run")
        self.close()

    def close(self):
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError:
                pass


class Recorder:
    """Audit entries (JSONL + a stderr line each) and the run's trace; raises only OSError
    from the constructor, for an audit file it cannot open."""

    def __init__(self, *, audit_path=None, trace_path=None, stderr=sys.stderr, quiet=False,
                 clock=time.time, tracer=None, exporter=None):
        self._stderr, self.quiet, self._clock = stderr, quiet, clock
        self._audit = _JsonlFile(audit_path, "audit log", self._say, must_open=True,
                                 consequence="disabled and no action can execute")
        self._trace = _JsonlFile(trace_path, "trace", self._say)
        self.tracer = tracer or otel.Tracer(clock=clock)
        self.trace_id = self.tracer.trace_id
        self.exporter = exporter    # called once with every span of the run, at finish()
        self.entries = []  # every audit entry of the run, also when no file is given

    @property
    def audit_error(self):
        """Why the audit file stopped taking entries during the run, or None while it works."""
        return self._audit.failure

    def audit_ok(self) -> bool:
        """True while every audit entry asked for is being written (the gate's check)."""
        return self._audit.failure is None

    def _say(self, line):
        try:
            print(line, file=self._stderr, flush=True)
        except Exception:  # a closed or broken stderr must not end the run either
            pass

    def audit(self, *, show=True, **fields) -> dict:
        """Record one audit entry; returns it with its time stamp and the run's trace id. With
        show=False it goes to the audit file only (the CLI already says it in other words)."""
        entry = {"time": _iso(self._clock()), "trace_id": self.trace_id, **fields}
        self.entries.append(entry)
        self._audit.write(entry)
        if show and not self.quiet:
            try:
                self._say(audit_line(entry))
            except Exception:
                pass
        return entry

    def trace(self, draft) -> None:
        """Record one span (a draft from otel.py) and append it to the trace file; never raises.
        Anything else becomes an event on the root span."""
        try:
            span = self.tracer.record(draft)
            if span is not None:
                self._trace.write(span)
        except Exception:
            pass

    def finish(self, outcome) -> None:
        """End the run's root span, write it and export the whole trace, once; never raises."""
        if self.tracer.root is not None:
            return
        try:
            self._trace.write(self.tracer.end(outcome))
            if self.exporter is not None:
                self.exporter([*self.tracer.spans, self.tracer.root])
        except Exception as exc:  # an exporter is meant not to raise; if it does, one line
            self._say(f"warning: trace export failed ({type(exc).__name__}: {exc})")

    def close(self):
        self._audit.close()
        self._trace.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _iso(seconds) -> str:
    try:
        moment = datetime.datetime.fromtimestamp(float(seconds), tz=datetime.timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return str(seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
