"""PromQL's literals, read and written as Prometheus 2.42 does: numbers (Go's ParseInt with
base 0, then ParseFloat: `0x1F`, `017` octal, `1e3`, `Inf`, `NaN`), durations (prometheus/
common's ParseDuration: units y w d h m s ms in that order, each once, greater than zero, at
most ~292 years) and double-quoted strings with Go escapes.
"""

import math
import re

_DURATION_RE = re.compile(r"(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?"
                          r"(?:(\d+)ms)?\Z")
_DURATION_MS = (365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1000, 1)
_MAX_INT64 = 2 ** 63 - 1
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
            "\r": "\\r", "\t": "\\t", "\v": "\\v", "\ufffd": "\\ufffd"}
_NEEDS_ESCAPE = re.compile('[\\\\"\x00-\x1f\x7f\ufffd\udc80-\udcff]')


def number_value(text):
    """A number token's value, read as Prometheus does (Go's ParseInt base 0, then ParseFloat)."""
    low = text.lower()
    if low in ("inf", "nan"):
        return math.inf if low == "inf" else math.nan
    try:
        if low.startswith("0x"):
            value = int(low[2:], 16)
            if value > _MAX_INT64:
                raise ValueError(text)
            return float(value)
        if low.isdigit() and low.startswith("0") and not set(low) & set("89"):
            value = int(low, 8)
            return float(value) if value <= _MAX_INT64 else float(low)
        return float(low)
    except ValueError:
        raise ValueError(f"error parsing number: {text!r}") from None


def duration_ms(text):
    """Milliseconds of a duration token (prometheus/common's ParseDuration, then > 0)."""
    match = _DURATION_RE.match(text)
    if not match or not text:
        raise ValueError(f"not a valid duration string: {text!r}")
    ms = sum(int(g) * unit for g, unit in zip(match.groups(), _DURATION_MS) if g)
    if ms * 1_000_000 > _MAX_INT64:
        raise ValueError("duration out of range")
    if ms == 0:
        raise ValueError("duration must be greater than 0")
    return ms


def quote(value):
    """A double-quoted PromQL string that Prometheus reads back as `value`."""
    return '"' + _NEEDS_ESCAPE.sub(_escape, value) + '"'


def _escape(match):
    c = match.group()
    if c in _ESCAPES:
        return _ESCAPES[c]
    if "\udc80" <= c <= "\udcff":          # a byte that is not UTF-8, kept as it was
        return f"\\x{ord(c) - 0xdc00:02x}"
    return f"\\x{ord(c):02x}"
