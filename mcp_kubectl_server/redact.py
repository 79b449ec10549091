"""Secret redaction: the one function every tool result passes through before it leaves the server.

`redact(text) -> text` replaces credential-shaped values with `[REDACTED]`: bearer/basic
authorization values, values of password/secret/token/api-key style keys (key=value,
key: value, "key": "value" and --key value forms), credentials inside URLs, AWS access key ids,
private key blocks, JWTs and a few well-known token prefixes. It errs towards over-redaction: a
hidden harmless value costs little, a leaked secret cannot be taken back. Every pattern runs in
linear time, because the text (logs, event messages) may be written by an attacker.
"""

import re

MASK = "[REDACTED]"

# Words that make a key's value secret (DB_PASSWORD, client_secret, GITHUB_TOKEN, apiKey, ...).
_SECRET_WORD = r"(?:passw(?:or)?d|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)"
_SECRET_KEY = re.compile(_SECRET_WORD, re.IGNORECASE)
# A key and the `=`, `:`, `": ` or (after a `--flag`) the spaces after it. The key is matched
# atomically (lookahead plus backreference) and only where a run of key characters begins, so log
# text an attacker controls ("a-a-a-...", "passwordpassword...") costs linear time, never
# quadratic backtracking.
_ASSIGNMENT = re.compile(r"(?<![A-Za-z0-9_.\-])(?=([A-Za-z0-9_.\-]+))\1([\"']?\s*(?:=|:(?!//))\s*|[ \t]+)")
_QUOTED = {q: re.compile(q + r"(?:[^" + q + r"\\\n]|\\.)*" + q + "?") for q in "\"'"}
_BARE = re.compile(r"[^\s\"',;&)}\]]+")

_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)",
                          re.DOTALL)  # also a block cut off before its END line
_HEADERS = [
    # Authorization headers: "Authorization: Bearer x", "authorization=Basic x".
    (re.compile(r"(\bauthorization\b[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token)\s+)?[^\s\"',;]+",
                re.IGNORECASE), r"\1" + MASK),
    (re.compile(r"\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*", re.IGNORECASE), r"\1 " + MASK),
]
_TOKENS = [
    # scheme://user:password@host (starts only where a scheme can begin: linear time).
    (re.compile(r"((?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+(@)", re.IGNORECASE),
     r"\1" + MASK + r"\2"),
    # JWTs: base64url header.payload.signature, header always starts with '{"' -> eyJ.
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}"), MASK),
    # AWS access key ids, GitHub/Slack/OpenAI-style tokens.
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"), MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), MASK),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}"), MASK),
]


def _masked_value(text, start):
    """(end, replacement) for the value at `start`, or None when there is nothing to hide."""
    quote = text[start:start + 1]
    if quote in _QUOTED:  # a quoted value keeps its quotes; an unterminated one ends at the line end
        end = _QUOTED[quote].match(text, start).end()
        closed = end - start > 1 and text[end - 1] == quote
        return end, quote + MASK + (quote if closed else "")
    if text.startswith(MASK, start):
        return None
    bare = _BARE.match(text, start)
    return (bare.end(), MASK) if bare else None


def redact_assignments(text):
    """Values of secret-named keys: key=value, key: value, "key": "value", --key value."""
    out, pos = [], 0
    for match in _ASSIGNMENT.finditer(text):
        key, spaces_only = match.group(1), not match.group(2).strip()
        if match.start() < pos or not _SECRET_KEY.search(key):
            continue
        if spaces_only and (not key.startswith("-") or text.startswith("-", match.end())):
            continue  # `--password VALUE` is a flag and its value; `password expired` is prose
        masked = _masked_value(text, match.end())
        if masked:
            out += [text[pos:match.end()], masked[1]]
            pos = masked[0]
    return "".join(out) + text[pos:]


def is_secret_key(name):
    """True when a key's name says its value is a credential (DB_PASSWORD, api-key, tls.token)."""
    return bool(_SECRET_KEY.search(name))


def redact(text):
    """Return `text` with every credential-shaped value replaced by [REDACTED]."""
    text = _PRIVATE_KEY.sub(MASK, text)
    for pattern, replacement in _HEADERS:  # before assignments: `token: Bearer x` hides x, too
        text = pattern.sub(replacement, text)
    text = redact_assignments(text)
    for pattern, replacement in _TOKENS:
        text = pattern.sub(replacement, text)
    return text
