"""Secrets by shape, for formats no table knows, and what triage must keep verbatim.

A token is a run of `A-Z a-z 0-9 + / _ -` (and `=` padding). It looks random when it is long
enough, mixes character classes, changes class often (camelCase words change rarely) and its
Shannon entropy comes near the most its length and alphabet allow:

    beside a credential word (words.py)    16+ characters, letters and digits, entropy >= 70 %
                                           (or 20+ letters of both cases alone, a case change
                                           at least every 3 chars: base64 with no digit in it)
    anywhere (redact_standalone)           32+ characters, upper, lower and digits, entropy
                                           >= 70 %, a class change at least every 3.5 chars;
                                           a line that is nothing but 40+ base64 of mixed case
                                           and digits is key material (a PEM body cut loose)

Never hidden by shape (KEEP): image digests (`sha256:` + hex), a hex tag or digest after `:` or
`@` (git SHAs in image tags), UUIDs (UIDs), numbers (resourceVersions), IPs and timestamps (`.`
and `:` end a token), Kubernetes object and label names: lowercase DNS names with a `-` or `.`,
pod-template hashes and generated suffixes, and `Kind/name` paths of names and CamelCase
words (_of_words: base64 with no digit in it can parse as CamelCase too).
A strong key's value (keys.py) is hidden whatever its shape: the key says it is secret.
"""

import base64
import binascii
import math
import re
from collections import Counter

from .formats import MASK

TOKEN = re.compile(r"[A-Za-z0-9+/_\-]{32,}={0,2}")
# A token with URL-encoded characters inside (`%2B`, `%2F`, `%3D`: an Azure SAS `sig`) is judged
# decoded and hidden whole, escapes and all; it is found from an escape (a literal `%`: a fast
# scan), then read both ways.
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_ENCODED_AROUND = re.compile(r"(?:[A-Za-z0-9+/_\-]|%[0-9A-Fa-f]{2})+(?:=|%3[dD]){0,2}")
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_BASE64 = re.compile(r"[A-Za-z0-9+/]{40,}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_NAME = re.compile(r"[a-z0-9]+(?:[-.][a-z0-9]+)+|[a-z]+[0-9]*|v[0-9]+(?:(?:alpha|beta)[0-9]+)?")
_CAMEL = re.compile(r"(?:[A-Z][a-z]+|[A-Z]+(?![a-z]))+[0-9]{0,3}|[a-z]+(?:[A-Z][a-z]+)+")
_DIGEST = re.compile(r"(?:sha256|sha384|sha512|sha1|md5):$")
_SPACE = " \t\"'`,;"


_DIGIT = re.compile(r"[0-9]")


def _classes(token):
    """(has upper case, has lower case, has a digit), in C speed."""
    return token.lower() != token, token.upper() != token, bool(_DIGIT.search(token))


def entropy_ratio(token):
    """Shannon entropy of `token` over the most its length and alphabet allow (0..1)."""
    n = len(token)
    if n < 2:
        return 0.0
    upper, lower, digit = _classes(token)
    alphabet = 10 * digit + 26 * (upper + lower) + 4 * any(c in "+/=_-" for c in token)
    if _HEX.fullmatch(token):
        alphabet = 16
    best = math.log2(min(n, max(alphabet, 2)))
    counts = Counter(token).values()
    found = -sum(c / n * math.log2(c / n) for c in counts)
    return found / best


def _changes(token):
    """How often the character class changes along the token (letters case-sensitive)."""
    kinds = ["d" if c.isdigit() else "u" if c.isupper() else "l" if c.islower() else "s"
             for c in token]
    return sum(a != b for a, b in zip(kinds, kinds[1:]))


def looks_random(token, *, strict):
    """True for a token shaped like a secret: the standalone rule when `strict`, else the one
    beside a credential word (the module docstring has both)."""
    n = len(token)
    upper, lower, digit = _classes(token)
    if strict:
        if n < 32 or not (upper and lower and digit) or _changes(token) * 3.5 < n:
            return False
    elif n < 16 or not (upper or lower):
        return False
    elif not digit and not (n >= 20 and upper and lower and (
            _changes(token) * 3 >= n or not _of_words(token))):
        return False  # letters alone: mixed case that changes case far more often than words do,
        # or not made of words (base64 of text: capitals most of the time, `ZEVGYVdXSFNE...`)
    return entropy_ratio(token) >= 0.7


def kept(token, text, start):
    """True when `token` (found at `start` in `text`) is on the must-keep list."""
    if _UUID.fullmatch(token) or token.isdigit():
        return True
    before = text[max(0, start - 8):start]
    if _HEX.fullmatch(token) and (_DIGEST.search(before) or before.endswith((":", "@", "//"))):
        return True
    pieces = [p for p in token.split("/") if p]
    return bool(pieces) and all(_kept_piece(p) for p in pieces)


def _kept_piece(piece):
    if _UUID.fullmatch(piece) or piece.isdigit():
        return True
    if _HEX.fullmatch(piece) and len(piece) >= 16 and "-" not in piece:
        return False  # a long hex run alone is a key as often as a hash
    return bool(_NAME.fullmatch(piece) or (_CAMEL.fullmatch(piece) and _of_words(piece)))


_LOWER_RUN = re.compile(r"[a-z]+")
_CAPITALS = re.compile(r"[A-Z]{2,}")  # a run of two or more capitals


def _of_words(camel):
    """CamelCase made of words (`FailedCreatePodSandBox`), not base64 that happens to parse as
    CamelCase (`QzFsczFpMFdpNmlD...`, no digit in it): a word's lowercase runs are 2.5 letters
    long or more on average, seldom one letter, where random mixed case gives 2 and one letter
    half the time; and words start with one capital each, an acronym now and then (`OOMKilled`,
    `NodeHasSufficientPID`), where random mixed case has runs of capitals all along
    (`BKxbTEpLokRKwtCW...`). One capitalised word (`Pod`, `Job`) is a word; all capitals
    (`AKIA...`) is none."""
    runs = [len(run) for run in _LOWER_RUN.findall(camel)]
    if len(_CAPITALS.findall(camel)) > 1:
        return False
    return len(runs) == 1 or (len(runs) > 1 and sum(runs) >= 2.5 * len(runs) and runs.count(1) <= 1)


def secret_value(value):
    """For a weak key (auth, key, sig): does its value look like a secret? A random-looking
    token, or base64 of `user:password` (docker's config.json)."""
    value = url_decoded(value.strip())
    if len(value) < 8 or " " in value or value.startswith(MASK):
        return False
    if looks_random(value, strict=False) and not kept(value, value, 0):
        return True
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and decoded.isascii() and decoded.decode("ascii").isprintable()


def _alone_on_line(text, start, end):
    """True when nothing but spaces and quotes share the token's line (a real newline or a
    JSON-escaped one, `\\n`)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end == -1 else line_end
    before = text[line_start:start].rsplit("\\n", 1)[-1]
    after = text[end:line_end].split("\\n", 1)[0]
    return not before.strip(_SPACE) and not after.strip(_SPACE)


def url_decoded(token):
    """A token with its URL escapes decoded (`%2B` -> `+`): its shape is judged on that."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(0)[1:], 16)), token) if "%" in token else token


def encoded_tokens(text, start=0, end=None):
    """The spans of the tokens with URL escapes in them, between `start` and `end`."""
    end, spans = len(text) if end is None else end, []
    for escape in _ESCAPE.finditer(text, start, end):
        if spans and escape.start() < spans[-1][1]:
            continue
        begin = escape.start()
        while begin > start:
            if begin - 3 >= start and _ESCAPE.fullmatch(text, begin - 3, begin):
                begin -= 3
            elif text[begin - 1] in _TOKEN_CHARS:
                begin -= 1
            else:
                break
        spans.append(_ENCODED_AROUND.match(text, begin, end).span())
    return spans


def _tokens(text):
    """(start, end) of every token redact_standalone looks at, in order."""
    spans = [match.span() for match in TOKEN.finditer(text)]
    if "%" not in text:
        return spans
    encoded = encoded_tokens(text)
    return sorted([s for s in spans if not any(a <= s[0] < b for a, b in encoded)] + encoded)


def redact_standalone(text):
    """Long random-looking tokens anywhere, and lines of bare key material."""
    out, pos = [], 0
    for start, end in _tokens(text):
        if start < pos:
            continue
        token = text[start:end]
        if token[0] == "n" and text[start - 1:start] == "\\":   # after an escaped newline
            token, start = token[1:], start + 1
        body = url_decoded(token).rstrip("=")
        if len(body) < 32:
            continue
        upper, lower, digit = _classes(body)
        if not (upper and lower and digit) or kept(body, text, start):
            continue   # both rules below want every class
        material = _BASE64.fullmatch(body) and _alone_on_line(text, start, end)
        if material or looks_random(body, strict=True):
            out += [text[pos:start], MASK]
            pos = end
    return "".join(out) + text[pos:] if out else text
