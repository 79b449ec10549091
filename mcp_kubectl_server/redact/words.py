"""Credential words with no key/value syntax around them: HTTP headers, prose, and a random
token beside a credential word.

    headers   Authorization values, Cookie / Set-Cookie headers, bearer/basic credentials
    prose     a strong credential phrase, a few plain words, a connector (is, was, are, =, :,
              set to, changed to) and a value: `secret access key is wJalr...`, `the password
              for bob was hunter2`; a plain lowercase word stays (`the token is invalid`)
    beside    within the next few words of any credential word on its line, a token that
              looks random (shapes.looks_random): `using token 9f8c...`, `sig Zm9v...`
    xml       <password>value</password>: the element's text, when the tag names a secret
    mysql     `mysql -u app -pS3cret`: the password glued to -p, on lines that run a client
"""

import re

from .formats import MASK
from .keys import KEY_CHARS, is_secret_key, key_strength, names_credential
from .shapes import kept, looks_random, url_decoded

_HEADERS = [
    ("authorization", re.compile(r"(\bauthorization\b[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic"
                                 r"|token)\s+)?[^\s\"',;]+", re.IGNORECASE), r"\1" + MASK),
    ("cookie", re.compile(r"(\b(?:set-)?cookie\b[\"']?[ \t]*[:=][ \t]*)[^\r\n\"']+",
                          re.IGNORECASE), r"\1" + MASK),
    ("bearer", re.compile(r"\b(bearer)\s+[A-Za-z0-9\-._~+/]{8,}=*", re.IGNORECASE),
     r"\1 " + MASK),
    ("basic", re.compile(r"\b(basic)\s+[A-Za-z0-9\-._~+/]{8,}=*", re.IGNORECASE), r"\1 " + MASK),
]
_TOKEN = re.compile(r"[A-Za-z0-9+/_\-]{16,}={0,2}")
_TOKEN_ENCODED = re.compile(r"(?:[A-Za-z0-9+/_\-]|%[0-9A-Fa-f]{2}){16,}(?:=|%3[dD]){0,2}")  # %2B
_WORD = re.compile(r"[^\s\"'`,;()\[\]{}<>]+")
_CONNECTORS = {"is", "was", "are", "were", "to", "now", "set", "still"}
_PLAIN = re.compile(r"[a-z]{1,12}|[A-Za-z][a-z]{0,11}")
_FILLER = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,40}")
_XML = re.compile(r"(<([A-Za-z_][\w.\-:]*)(?:\s[^<>]*)?>)[^<]+")
_MYSQL = re.compile(r"\b(?:mysql|mariadb)[a-z]*\b", re.IGNORECASE)
_DASH_P = re.compile(r"(\s-p)[^\s\"']+")
_NEARBY, _REACH = 6, 160   # words and characters after a credential word that are looked at


def redact_headers(text, lowered):
    """Authorization, Cookie, bearer and basic: each pattern runs only where its word is."""
    for needle, pattern, replacement in _HEADERS:
        probe = lowered if lowered is not None else text.lower()
        at = probe.find(needle)
        if at == -1:
            continue
        out, pos = [], 0
        while at != -1:
            start = max(at - 4, pos)   # `set-cookie` starts before its word
            match = pattern.search(text, start, at + len(needle) + 4096)
            if match and match.start() <= at:
                out += [text[pos:match.start()], match.expand(replacement)]
                pos = match.end()
            at = probe.find(needle, max(at + 1, pos))
        text = "".join(out) + text[pos:]
        lowered = text.lower() if lowered is not None else None
    return text


def _line_words(text, start):
    """The words after `start` on its line, within _REACH characters: [(start, end, word)]."""
    end = text.find("\n", start)
    end = min(len(text) if end == -1 else end, start + _REACH)
    return [(m.start(), m.end(), m.group(0)) for m in _WORD.finditer(text, start, end)]


def _prose_value(words):
    """Index of the value in `credential [words] connector VALUE`, or None."""
    for i, (_, _, word) in enumerate(words[:5]):
        if word.lower() in _CONNECTORS:
            value = i + 1
            while value < len(words) and words[value][2].lower() in _CONNECTORS:
                value += 1    # `is now`, `was set to`
            if value < len(words) and not _PLAIN.fullmatch(words[value][2].rstrip(".,!")):
                return value
            return None
        if not _FILLER.fullmatch(word):
            return None
    return None


def redact_prose(text, starts):
    """The prose and beside rules for the credential words at `starts` (keys.py left them)."""
    spans = []
    for start in starts:
        end = start
        while end < len(text) and text[end] in KEY_CHARS:
            end += 1
        key = text[start:end].strip("._-")
        strength = key_strength(text, start, key)
        if strength is None:
            continue
        words = [w for w in _line_words(text, end) if not text.startswith(MASK, w[0] - 1)]
        value = _prose_value(words) if strength == "strong" and names_credential(key) else None
        if value is not None:
            w_start, w_end, word = words[value]
            spans.append((w_start, w_start + len(word.rstrip(".,!"))))
        for w_start, w_end, _ in words[:_NEARBY]:
            encoded = text.find("%", w_start, w_end) != -1
            for piece in (_TOKEN_ENCODED if encoded else _TOKEN).finditer(text, w_start, w_end):
                token, offset = url_decoded(piece.group(0)), piece.start()
                if looks_random(token, strict=False) and not kept(token, text, offset):
                    spans.append((offset, piece.end()))
    return _apply(text, spans)


def _apply(text, spans):
    out, pos = [], 0
    for start, end in sorted(spans):
        if start < pos or text.startswith(MASK, start):
            continue
        out += [text[pos:start], MASK]
        pos = end
    return "".join(out) + text[pos:] if out else text


def redact_xml(text):
    def hide(match):
        return match.group(1) + MASK if is_secret_key(match.group(2)) else match.group(0)
    return _XML.sub(hide, text) if "<" in text else text


def redact_mysql(text):
    probe = text.lower() if text.isascii() else text.lower().ljust(len(text))[:len(text)]
    lines = {text.rfind("\n", 0, at) + 1 for word in ("mysql", "mariadb")
             for at in _finds(probe, word)}
    out, pos = [], 0
    for start in sorted(lines):
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        if _MYSQL.search(text, start, end):
            out += [text[pos:start], _DASH_P.sub(r"\1" + MASK, text[start:end])]
            pos = end
    return "".join(out) + text[pos:] if out else text


def _finds(text, word):
    at = text.find(word)
    while at != -1:
        yield at
        at = text.find(word, at + 1)
