"""Known token formats: one table row per vendor format (vendors.py), each a shape made of
literal text and placeholders, `{alphabet:length}`. The same shape matches a token here and
makes a realistic fresh one in the tests (tests/server/test_redact_formats.py plants one of
each, everywhere).

    {b62:36}    exactly 36 characters of the b62 alphabet (the last placeholder: 36 or more)
    {hex:32-40} 32 to 40 characters        {b64u:20+} 20 or more characters
    {NAME}      one of the literals CHOICES[NAME]; {UUID} a UUID; {JWT} a JWT's last segments

Rows are written from what each vendor publishes about its own tokens (prefix, alphabet and
length); a vendor that lengthens its tokens is still matched, since the last part has no upper
bound. A head that announces a credential by itself (`xapp-`, `xoxc-`, `ghp_`, `glpat-`,
`sk_live_`: four characters or more ending in `_`, `-` or `.`, not a plain word such as `key-`)
is a token whatever follows it: 8 or more token characters with a digit among them (and not,
with the head, a Kubernetes object name: `xai-proxy-7d9f4`), even when the body has a layout
the row does not know (Slack's `xapp-1-A0123...-1234...-0a1b...`).

A row whose shape starts with a literal is found through one scan for every prefix at once (a
trie-shaped pattern, fast on text that has none); the few rows whose literal sits inside the
token are searched only when that literal occurs in the text.
"""

import functools
import re

from .vendors import ALPHABETS, CHOICES, ROWS as _ROWS

MASK = "[REDACTED]"

_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9]+)(?::(\d+)(?:(\+)|-(\d+))?)?\}")
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def parts(shape):
    """A shape as ("lit", text) | ("choice", literals) | ("run", alphabet, low, high or None)."""
    out, pos = [], 0
    for match in _PLACEHOLDER.finditer(shape):
        if match.start() > pos:
            out.append(("lit", shape[pos:match.start()]))
        name, low, plus, high = match.groups()
        if name in CHOICES:
            out.append(("choice", CHOICES[name]))
        elif name == "JWT":   # the rest of a JWT: up to two more dot-separated segments
            out.append(("raw", r"(?:\.[A-Za-z0-9_\-]*){0,2}"))
        elif name == "UUID":
            out.append(("uuid",))
        else:
            low = int(low)
            out.append(("run", ALPHABETS[name], low, None if plus else int(high or low)))
        pos = match.end()
    if pos < len(shape):
        out.append(("lit", shape[pos:]))
    return out


def _regex(shape, *, shortest=False):
    """The pattern of a shape; its last run has no upper bound (a longer token still matches).
    `shortest`: every run exactly at its lower bound, a test that reads no further than it must."""
    pieces = parts(shape)
    last = max((i for i, p in enumerate(pieces) if p[0] in ("run", "uuid")), default=-1)
    out = []
    for i, piece in enumerate(pieces):
        if piece[0] == "lit":
            out.append(re.escape(piece[1]))
        elif piece[0] == "choice":
            out.append("(?:" + "|".join(map(re.escape, sorted(piece[1], key=len,
                                                                reverse=True))) + ")")
        elif piece[0] == "uuid":
            out.append(UUID)
        elif piece[0] == "raw":
            out.append(piece[1])
        else:
            _, alphabet, low, high = piece
            bound = f"{low}" if shortest else f"{low}," if i == last or high is None else (
                f"{low}" if high == low else f"{low},{high}")
            out.append(f"[{alphabet}]{{{bound}}}")
    return "".join(out)


def prefixes(shape):
    """The literal texts a shape can start with, or () when it starts with a run."""
    heads = [""]
    for piece in parts(shape):
        if piece[0] == "lit":
            heads = [h + piece[1] for h in heads]
        elif piece[0] == "choice":
            heads = [h + c for h in heads for c in piece[1]]
        else:
            break
    return tuple(h for h in heads if len(h) >= 2)


def _trie(words):
    """One pattern matching any of `words`, shaped as a trie so each position costs a few steps."""
    root = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node):
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body
    return emit(root)


@functools.cache
def _table():
    """The table compiled on first use (no work at import time): the head trie, and each row's
    pattern source by head, compiled only when its head occurs in some text (_pattern)."""
    by_head, infix = {}, []
    for row in _ROWS:
        source = _regex(row.shape)
        heads = prefixes(row.shape)
        for head in heads:  # a short plain head (SK, cio, pat) needs letters and digits after it
            weak = len(head) <= 3 and head.isalnum()
            by_head.setdefault(head, []).append((source, weak))
        if not heads:
            infix.append(_infix(row.shape, re.compile(source)))
    for head, sources in by_head.items():   # tried after the head's own rows
        if announces(head):
            sources.append((re.escape(head) + _ANY_BODY, _LOOSE))
    # A token starts the text or follows a character that is not a letter or digit: scanning
    # for that character first leaves the trie most positions untried.
    trie = _trie(sorted(by_head, key=len, reverse=True))
    return re.compile(trie), re.compile(r"[^A-Za-z0-9](" + trie + ")"), by_head, infix


_pattern = functools.cache(re.compile)
# %2B: URL-encoded; at most 400: a head repeated (`xoxb-xoxb-...`) must not read on each time
_ANY_BODY, _LOOSE = r"(?:[A-Za-z0-9_\-]|%[0-9A-Fa-f]{2}){8,400}", "loose"
# Heads that are also an ordinary word or a version (`key-rotation-2`, `API-GATEWAY-1`,
# `v1.0-rc1`): after them only a row's whole shape is a token.
_WORD_HEADS = frozenset({"key-", "API-", "secret_", "v1.0-"})


_OBJECT_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)+")


def announces(head):
    """True when a token head says `credential` by itself, so any body after it is one."""
    return len(head) >= 4 and head[-1] in "_-." and head not in _WORD_HEADS


def _loose_token(token, body):
    """An announcing head's body of no known layout: it has a digit, and the whole is not shaped
    like a Kubernetes object name (`xai-proxy-7d9f4`, `glft-sync-2`: lowercase words and short
    generated suffixes; a run of 12 or more with a digit in it is a token's, not a name's)."""
    if not any(c.isdigit() for c in body):
        return False
    return not _OBJECT_NAME.fullmatch(token) or any(
        len(part) >= 12 and not part.isalpha() for part in token.split("-"))


def _infix(shape, pattern):
    """(rest, pattern, shortest and longest text before the rest) for a shape whose longest
    literal sits inside it; rest is the pattern of the shortest text of the shape from that
    literal on (so that finding it reads no further than that: see _infix_spans)."""
    pieces = parts(shape)
    gate_at = max((i for i, p in enumerate(pieces) if p[0] == "lit"),
                  key=lambda i: len(pieces[i][1]))
    low = sum(p[2] for p in pieces[:gate_at] if p[0] == "run")
    high = sum(p[3] or p[2] for p in pieces[:gate_at] if p[0] == "run") + sum(
        max(map(len, p[1])) for p in pieces[:gate_at] if p[0] == "choice")
    rest = "".join(p[1] if p[0] == "lit" else "{" + _name(p) + "}" for p in pieces[gate_at:])
    return re.compile(_regex(rest, shortest=True)), pattern, low, high


def _name(piece):
    """A parsed piece back in shape syntax (for the rest of a shape after its gate)."""
    if piece[0] == "uuid":
        return "UUID"
    if piece[0] == "choice":
        return next(name for name, choices in CHOICES.items() if choices == piece[1])
    _, alphabet, low, high = piece
    name = next(name for name, chars in ALPHABETS.items() if chars == alphabet)
    return f"{name}:{low}" + ("+" if high is None else f"-{high}" if high != low else "")


_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _token_end(text, start, longest, by_head, loose):
    """Where the known token starting at `start` ends, or None when none starts there;
    `longest` is the longest head the scan found there (shorter heads are tried after it).
    `loose` ([end]) is where the last body of no known layout that was no token ended: a head
    inside it (`xoxb-xoxb-xoxb-...`) has no other body to try, so it is not read again."""
    for size in range(len(longest), 1, -1):
        head = longest[:size]
        if head in by_head:
            for source, weak in by_head[head]:
                if weak == _LOOSE and start < loose[0]:
                    continue
                match = _pattern(source).match(text, start)
                body = match and match.group(0)[len(head):]
                if match and weak == _LOOSE and not _loose_token(match.group(0), body):
                    loose[0] = match.end()
                elif match and not (weak and _plain(body)):
                    return match.end()
    return None


def _plain(body):
    """True when a token body lacks a digit or a letter: a word or a number, not a token."""
    return body.isdigit() or not any(c.isdigit() for c in body)


def redact_formats(text):
    """Every token of a known vendor format becomes [REDACTED]."""
    at_start, scan, by_head, infix = _table()
    spans = []
    first = at_start.match(text)
    hits = [(0, first.group(0))] if first else []
    loose = [0]
    for start, head in hits + [(hit.start(1), hit.group(1)) for hit in scan.finditer(text)]:
        if spans and start < spans[-1][1]:
            continue
        end = _token_end(text, start, head, by_head, loose)
        if end:
            spans.append((start, end))
    for rest, pattern, low, high in infix:
        spans += _infix_spans(text, rest, pattern, low, high)
    return _masked(text, spans)


def _infix_spans(text, rest, pattern, low, high):
    """Tokens whose shape's longest literal is inside: found by the rest of the shape from that
    literal on (a pattern that starts with a literal scans fast), then matched from before it.
    Gates may overlap: a token whose head holds the literal too (`Q~4` + `1Q~...`) has its
    real gate inside the first one, so the search goes on one character on, not past the gate.
    Each step reads a bounded stretch (the gate is the shape's shortest rest, a start is tested
    for its boundary before the pattern runs), so text made of gates stays linear."""
    spans = []
    gate = rest.search(text)
    while gate:
        at, end = gate.start(), None
        for start in range(max(0, at - high), at - low + 1):
            if start and text[start - 1] in _ALNUM:
                continue
            match = pattern.match(text, start)
            if match:
                spans.append(match.span())
                end = match.end()
                break
        gate = rest.search(text, end or at + 1)
    return spans


def _masked(text, spans):
    out, pos = [], 0
    for start, end in sorted(spans):
        if start >= pos:
            out += [text[pos:start], MASK]
            pos = end
    return "".join(out) + text[pos:] if out else text


def rows():
    """The table, for the tests and the docs: (vendor, what, shape) rows."""
    return list(_ROWS)
