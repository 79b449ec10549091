"""Message shapes: what search_logs shows when it is given no pattern.

A line that looks like trouble (looks_like_trouble: error, exception, fatal, panic, refused, timeout, denied,
HTTP 5xx, a stack frame, a non-zero exit, a warning, ...) is reduced to its shape: timestamps,
UUIDs, IP addresses, hex ids and hashes, durations and other numbers become <time> <uuid> <ip>
<hex> <dur> <n>, so ten thousand "timeout after 5012ms request_id=..." lines are one shape with
a count. `ShapeTable` counts each shape with the pods it came from, its first and last time and
one example line, within a bound on distinct shapes. `render_shapes` marks a shape `new` when it
was first seen in the last tenth of the window, `rising` when its rate there is far above its
rate before, and sorts marked shapes first, then by severity (fatal, error, the rest, warnings),
then the most recently seen, so a rare new error is not buried under a frequent old warning.
"""

import re
from datetime import datetime, timezone

from mcp_kubectl_server.digests.text import format_time, one_line

SHAPES_SHOWN = 30
SHAPES_KEPT = 2000  # distinct shapes tracked; the rest are counted as "other"
SHAPE_CHARS = 160
RISING_FACTOR = 5  # the last tenth's rate this many times the rest's
# Trouble is a word anywhere in the lowered line (a loop of `in` tests is several times faster
# than one alternation regex, which CPython's matcher tries at every position), or one of the
# shapes below, tried only when a cheap test says the line may hold it.
TROUBLE_WORDS = ("error", "exception", "fatal", "panic", "refused", "timeout", "timed out",
                 "deadline exceeded", "denied", "forbidden", "unauthori", "fail", "crash", "oomkill",
                 "out of memory", "killed", "deadlock", "unavailable", "unreachable", "traceback",
                 "segfault", "segmentation fault", "abort", "warn", "critical", "x509", "broken pipe",
                 "reset by peer", "no such host", "exhausted")
_HTTP_5XX = re.compile(r"(?:status|code|http)[\s=:_\"]{0,3}5\d\d\b"
                       r"|(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS) \S+(?: HTTP/[\d.]+\"?)? 5\d\d\b", re.I)
_EXIT = re.compile(r"exit(?:ed)?(?: with)? (?:code|status) [1-9]", re.I)
_FRAME = re.compile(r"\s+(?:at [\w.$<>]+\(|File \")")
# The block search (trouble_rows) looks for needles with bytes.find, in C, over the lowered block
# packed to the bytes needles are made of (letters, space, escape; newlines kept, to count lines
# by): about half of a log's bytes. A needle is a part of one or more words (a line holding the
# word holds the needle, and each line found is checked again), so words that share a rare part
# cost one pass. x509 has digits: it is looked for with the shapes below.
_PACK_DROP = bytes(sorted(set(range(256)) - set(b"abcdefghijklmnopqrstuvwxyz \x1b\n")))
_SHARED = ("kill", "deadl")  # oomkill and killed; deadline exceeded and deadlock
_NEEDLES = tuple(word.encode() for word in _SHARED + tuple(
    w for w in TROUBLE_WORDS if w != "x509" and not any(part in w for part in _SHARED))) \
    + (b"exit", b"\x1b")  # an escape sequence may split a word (the table sees the line without it)
# Where in a block the other shapes may be (over the lowered block itself): x509, a frame's "at
# x(" or 'File "' after a space, a status (5 and two digits, not followed by a letter or digit)
# after what _HTTP_5XX allows before it; each regex starts with a literal, which the matcher
# looks for in C before trying the rest.
_BLOCK_SHAPES = (re.compile("x509"), re.compile(r"at (?<=\sat )[\w.$<>]+\("), re.compile(r'file "(?<=\sfile ")'),
                 re.compile(r'5\d\d(?!\w)(?<=[\s=:_"sepſ]5\d\d)'))


def looks_like_trouble(line):
    """True for an error, exception, fatal, panic, refusal, timeout, denial, HTTP 5xx, stack
    frame, non-zero exit, warning, ... line."""
    low = line.lower()
    for word in TROUBLE_WORDS:
        if word in low:
            return True
    if (" 5" in line or "=5" in line or ":5" in line or '"5' in line) and _HTTP_5XX.search(line):
        return True
    if "exit" in low and _EXIT.search(line):
        return True
    return line[:1] in (" ", "\t") and _FRAME.match(line) is not None


# (pattern, placeholder, a character every match holds: a line without it is not searched)
_MASKS = [
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>", ":"),
    (re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"), "<uuid>", "-"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>", "."),
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,}\b|\b0x[0-9a-fA-F]+\b"), "<hex>", ""),
    (re.compile(r"\b\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h)\b"), "<dur>", ""),
    (re.compile(r"\b\d+(?:\.\d+)?\b"), "<n>", ""),
]
_SEVERITY = [(re.compile(r"\b(?:fatal|panic|panicked|critical|oom|out of memory|segfault)\b", re.I), 0),
             (re.compile(r"\b(?:error|err|exception|fail|failed|failure|traceback|denied|refused)\b", re.I), 1),
             (re.compile(r"\b(?:warn|warning)\b", re.I), 3)]


def shape_of(line):
    """The line with its variable parts masked, squeezed onto one line and cut."""
    text = line
    for pattern, placeholder, needs in _MASKS:
        if needs in text:
            text = pattern.sub(placeholder, text)
    return " ".join(text.split())[:SHAPE_CHARS]


def severity(shape):
    return next((rank for pattern, rank in _SEVERITY if pattern.search(shape)), 2)


def trouble_rows(text):
    """The indices of the lines of a block (lines joined by newlines) that may be trouble, in
    order: every line whose text, or whose text after its first space (a kubelet stamp),
    looks_like_trouble accepts, and some more."""
    low = text.lower()
    packed = low.encode("utf-8", "replace").translate(None, _PACK_DROP)  # other letters' bytes dropped too
    hits = []
    for needle in _NEEDLES:
        at = packed.find(needle)
        while at >= 0:
            hits.append(at)
            end = packed.find(b"\n", at)
            at = packed.find(needle, end) if end >= 0 else -1
    rows = set(_rows_of(packed, hits, b"\n"))
    rows.update(_rows_of(low, [match.start() for pattern in _BLOCK_SHAPES for match in pattern.finditer(low)], "\n"))
    return sorted(rows)


def _rows_of(text, offsets, newline):
    """The line index of each of `offsets` in `text` (counted once over the text, in order)."""
    rows, row, last = [], 0, 0
    for at in sorted(offsets):
        row += text.count(newline, last, at)
        last = at
        rows.append(row)
    return rows


class ShapeTable:
    """Counts of trouble shapes in one search (every pod and container)."""

    def __init__(self, *, start, end):
        self.start, self.end = start, end
        self.recent_from = end - (end - start) / 10  # the window's last tenth
        self.shapes = {}  # shape -> [count, pods, first, last, example, count in the last tenth]
        self.other = 0
        self.lines = 0

    def add(self, line, stamp, pod):
        """Count `line` (stamped `stamp` by the kubelet, in `pod`) when it looks like trouble."""
        if not looks_like_trouble(line):
            return
        self.lines += 1
        moment = stamp_epoch(stamp, self.end)
        shape = shape_of(line)
        entry = self.shapes.get(shape)
        if entry is None:
            if len(self.shapes) >= SHAPES_KEPT:
                self.other += 1
                return
            entry = self.shapes[shape] = [0, set(), moment, moment, line, 0]
        entry[0] += 1
        entry[1].add(pod)
        entry[2], entry[3] = min(entry[2], moment), max(entry[3], moment)
        entry[5] += moment >= self.recent_from

    def mark(self, entry):
        """'new', 'rising' or '' for one shape."""
        if entry[2] >= self.recent_from:
            return "new"
        recent, earlier = entry[5], entry[0] - entry[5]
        # the last tenth's rate (recent / 1) against the nine tenths' (earlier / 9)
        if recent >= 3 and recent * 9 >= RISING_FACTOR * max(earlier, 1):
            return "rising"
        return ""


def render_shapes(table):
    """The summary's lines: one per shape (at most SHAPES_SHOWN), then what was left out."""
    if not table.shapes:
        return ["no line in the window looks like trouble (error, exception, fatal, panic, refused, "
                "timeout, denied, HTTP 5xx, stack frames, non-zero exits, warnings)"]
    rows = []
    for shape, entry in table.shapes.items():
        mark = table.mark(entry)
        rows.append(((0 if mark else 1), severity(shape), -entry[3], shape, mark, entry))
    rows.sort(key=lambda row: row[:4])
    out = [f"{len(rows)} shapes in {table.lines} trouble lines (marked first, then fatal, error, "
           "other, warning; each with count, pods, first and last time, one example):"]
    for _, _, _, shape, mark, entry in rows[:SHAPES_SHOWN]:
        count, pods, first, last, example = entry[:5]
        pod_text = ",".join(sorted(pods)[:5]) + (f",+{len(pods) - 5} more" if len(pods) > 5 else "")
        out.append(f"- {'[' + mark + '] ' if mark else ''}count={count} pods={pod_text} "
                   f"first={_at(first)} last={_at(last)}")
        out.append(f"  shape: {one_line(shape, SHAPE_CHARS)}")
        out.append(f"  example: {one_line(example, 300)}")
    left = rows[SHAPES_SHOWN:]
    if left or table.other:
        out.append(f"... {len(left)} more shapes ({sum(r[5][0] for r in left) + table.other} lines) not "
                   "shown" + (f"; {table.other} lines past the {SHAPES_KEPT}-shape bound" if table.other else "")
                   + ": search them with a pattern")
    return out


def stamp_epoch(stamp, default):
    """Epoch seconds of an RFC 3339 stamp (2026-12-07T19:49:47.150077105Z), else `default`."""
    try:
        whole = datetime.fromisoformat(stamp[:19]).replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return default
    fraction = stamp[19:].rstrip("Z")
    return whole + (float("0" + fraction) if fraction[:1] == "." and fraction[1:].isdigit() else 0.0)


def _at(moment):
    return format_time(datetime.fromtimestamp(moment, timezone.utc))
