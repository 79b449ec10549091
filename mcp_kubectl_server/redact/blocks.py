"""PEM and PGP blocks: from BEGIN to the matching END, over the body lines that follow a BEGIN
whose END a cut removed, and the body lines before an END whose BEGIN a log tail cut off (real
or JSON-escaped newlines). Linear: END positions are found once, then looked up.
"""

import bisect
import re

from .formats import MASK

_LABEL = r"([A-Z0-9 ]*PRIVATE KEY|PGP [A-Z ]+|ENCRYPTED [A-Z ]+)"
_BEGIN = re.compile(r"-----BEGIN " + _LABEL + "-----")
_END = re.compile(r"-----END " + _LABEL + "-----")
# A block whose END line is missing runs on over the lines that look like its body or headers.
_CUT_BODY = re.compile(r"[^\n]*(?:\n(?=[ \t]*(?:[A-Za-z0-9+/=]{16}|\n|$|(?:Proc-Type|DEK-Info|"
                       r"Version|Comment|Hash|Charset): ))[^\n]*)*")
_NEWLINE = re.compile(r"\\n|\n")
_B64_PIECE = re.compile(r"[ \t\"'\r]*[A-Za-z0-9+/=]*[ \t\"'\r]*")
_B64_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="


def _body_start(text, pos, end):
    """Where the run of base64-only lines (real or escaped newlines) that ends at `end` starts;
    the first line may carry a prefix (`key=MIIE...`): only its base64 tail is taken."""
    start, separator = end, 0
    for piece in reversed(_NEWLINE.split(text[pos:end])):
        if not _B64_PIECE.fullmatch(piece):
            kept = piece.rstrip(" \t\"'\r")
            run = len(kept) - len(kept.rstrip(_B64_CHARS))
            return start - (len(piece) - len(kept) + run) if run >= 16 else start + separator
        start -= len(piece)
        separator = 2 if text.startswith("\\n", start - 2) else 1
        start -= separator
    return pos


def redact_blocks(text):
    """PEM and PGP blocks from BEGIN to the matching END, or over the body lines that follow a
    BEGIN whose END a cut removed. Linear: END positions are found once, then looked up."""
    ends = {}
    for match in _END.finditer(text):
        ends.setdefault(match.group(1), []).append(match.start())
    out, pos = [], 0
    for match in _BEGIN.finditer(text):
        if match.start() < pos:
            continue
        later = ends.get(match.group(1), [])
        i = bisect.bisect_left(later, match.end())
        stop = (later[i] + len(match.group(1)) + 14 if i < len(later)   # "-----END " + "-----"
                else _CUT_BODY.match(text, match.end()).end())
        out += [text[pos:match.start()], MASK]
        pos = stop
    return "".join(out) + text[pos:]


def redact_key_bodies(text):
    """Key material whose BEGIN line a log tail cut off: the base64 lines before an END line
    (a body line on its own is shapes.redact_standalone's)."""
    out, pos = [], 0
    for match in _END.finditer(text):
        start = max(_body_start(text, pos, match.start()), pos)
        out += [text[pos:start], MASK]
        pos = match.end()
    return "".join(out) + text[pos:]
