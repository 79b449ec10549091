"""Run records: the price table and cost, the audit log, and the trace.

- cost (prices.py, its names re-exported here): `cost_usd(model, usage, prices)` prices one
  response's `usage` from the operator's prices or the built-in `PRICES`; an unknown model
  prices as None, never as a guess. `Usage` adds responses up for the outcome; `cost_line` is
  the one line at the end; `money` rounds a USD amount wherever one is printed or serialized.
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
import sys
import time

from mcp_kubectl_server.redact import redact

from triage_agent.telemetry import otel
from triage_agent.telemetry.otel import model_call_span, tool_span  # noqa: F401  the loop's span drafts
from triage_agent.telemetry.prices import (PRICES, PRICES_TAKEN, Price,  # noqa: F401  the cost
                                           PriceTable, Usage, cost_line, cost_usd, money,
                                           price_for)  # half of the records, as before
from triage_agent.terminal import printable, shorten


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
            "error", "provider"}
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
        self.provider = None  # the model endpoint's gen_ai.provider.name, on every entry

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
        if self.provider:
            entry["provider"] = self.provider
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
