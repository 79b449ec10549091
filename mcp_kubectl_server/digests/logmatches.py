"""Pattern matches across many containers' logs, with context, kept within bounds.

`MatchScan` is fed every container's log in blocks of lines (begin / block / end), in order; a
block in which the pattern matches nowhere costs one search in C, the others are fed line by line, and keeps per container the lines scanned, the lines matched and the times of the first
and last match, and overall at most `max_matches` groups (a match with its `context` lines
around it; matches closer than that share a group), the newest. It never holds a log: a ring of
the last few lines and the groups it keeps.

A line counts as a match only when the pattern still matches it after redaction, so a pattern
cannot probe a secret's value by whether it matches. `render_groups` redacts each group with the
REDACT_MARGIN lines before it (a `password:` key over its value still hides the value), then
shows `POD/CONTAINER TIME: line` for a match and `POD/CONTAINER TIME- line` for context, as grep
marks them, the newest last.
"""

import collections
import re
import time

from mcp_kubectl_server.digests.logpattern import literal_alternatives
from mcp_kubectl_server.digests.text import clean_log_text
from mcp_kubectl_server.redact import redact

REDACT_MARGIN = 8
LINE_CHARS = 1000
_STAMP = re.compile(r"^[^ \n]* ", re.M)  # the kubelet's stamp before each line of a block
_CASED = re.compile(r"\\[A-Z]|\(\?|\\N")  # escapes whose meaning lowering would change; inline flags


class MatchScan:
    """One search's matches (see the module docstring); `clock` is a logpattern.MatchClock."""

    def __init__(self, regex, clock, *, context, max_matches):
        self.regex, self.clock, self.context = regex, clock, context
        # A block with no match of the pattern (as multi-line) anywhere has no matching line, so
        # most blocks are searched once, in C. An anchor must see the lines without their stamps.
        # Ignoring case, the lowered pattern over the lowered block is several times faster (the
        # matcher's literal search works without IGNORECASE), where lowering keeps its meaning.
        self.lowered = bool(regex.flags & re.I) and not _CASED.search(regex.pattern)
        self.prefilter = (re.compile(regex.pattern.lower(), re.M) if self.lowered
                          else re.compile(regex.pattern, regex.flags | re.M))
        self.anchored = any(a in regex.pattern for a in ("^", "\\A", "\\Z"))
        words = literal_alternatives(regex.pattern)  # plain strings: str `in`, faster still
        self.words = tuple(w.lower() for w in words) if words and self.lowered else words
        self.groups = collections.deque(maxlen=max_matches)
        self.stats = []  # [where, scanned, matched, first stamp, last stamp] per container
        self._ring = collections.deque(maxlen=context + REDACT_MARGIN)
        self._open = None  # the group still taking lines after its last match
        self._after = 0

    def begin(self, where):
        self._ring.clear()
        self._open, self._after = None, 0
        self.stats.append([where, 0, 0, None, None])

    def block(self, text):
        """Feed a block of stamped lines (reader.stream_blocks); returns how many lines it held."""
        count = text.count("\n") + 1
        if self._open is None:
            searched = _STAMP.sub("", text) if self.anchored else text
            searched = searched.lower() if self.lowered else searched
            if not self._may_match(searched):
                self.stats[-1][1] += count
                ring = self._ring.maxlen
                self._ring.extend(tuple(raw.partition(" ")[::2]) for raw in text.rsplit("\n", ring)[-ring:])
                return count
        for raw in text.split("\n"):
            stamp, _, body = raw.partition(" ")
            self.line(stamp, clean_log_text(body) if "\x1b" in body else body)
        return count

    def _may_match(self, searched):
        if self.words is None:
            return self.clock.search(self.prefilter, searched) is not None
        started = time.perf_counter()
        found = any(word in searched for word in self.words)
        self.clock.charge(time.perf_counter() - started)
        return found

    def line(self, stamp, text):
        stat = self.stats[-1]
        stat[1] += 1
        text = text[:LINE_CHARS]
        if self.clock.search(self.regex, text) and self._still_matches(text):
            stat[2] += 1
            stat[3] = stat[3] or stamp
            stat[4] = stamp
            if self._open is None:
                self._open = {"where": stat[0], "lines": [], "margin": list(self._ring)[-REDACT_MARGIN - self.context:]}
                margin = self._open["margin"]
                cut = max(len(margin) - self.context, 0)
                self._open["lines"] = [(s, t, False) for s, t in margin[cut:]]
                self._open["margin"] = margin[:cut]
                self.groups.append(self._open)
            self._open["lines"].append((stamp, text, True))
            self._after = self.context
        elif self._open is not None:
            self._open["lines"].append((stamp, text, False))
            self._after -= 1
        if self._open is not None and self._after <= 0:
            self._open = None
        self._ring.append((stamp, text))

    def end(self):
        self._open = None

    def _still_matches(self, text):
        hidden = redact(text)
        return hidden == text or self.regex.search(hidden) is not None

    def matched(self):
        return sum(stat[2] for stat in self.stats)


def render_groups(groups):
    """The shown lines of `groups`, oldest first by their first match, each group redacted whole."""
    out = []
    ordered = sorted(groups, key=lambda g: next(s for s, _, m in g["lines"] if m))
    for number, group in enumerate(ordered):
        if number and group_gap(group):
            out.append("--")
        margin = [t for _, t in group["margin"]]
        shown = group["lines"]
        hidden = redact("\n".join(margin + [t for _, t, _ in shown])).split("\n")
        texts = hidden[len(margin):] if len(hidden) == len(margin) + len(shown) else [
            redact(t) for _, t, _ in shown]
        for (stamp, _, is_match), text in zip(shown, texts):
            out.append(f"{group['where']} {short_stamp(stamp)}{':' if is_match else '-'} {text}")
    return out


def group_gap(group):
    """True when the group has context lines (groups are then separated by --, as grep does)."""
    return any(not is_match for _, _, is_match in group["lines"])


def short_stamp(stamp):
    """2026-12-07T19:49:47.150077105Z -> 2026-12-07T19:49:47Z (the kubelet's stamp to the second)."""
    return stamp[:19] + "Z" if len(stamp) >= 19 and stamp[10:11] == "T" else stamp or "time=unknown"
