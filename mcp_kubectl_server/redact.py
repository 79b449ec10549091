"""Secret redaction: the one function every tool result passes through before it leaves the server.

`redact(text) -> text` replaces credential-shaped values with `[REDACTED]`: bearer/basic
authorization values, values of password/secret/token/api-key style keys (key=value,
key: value and "key": "value" forms), credentials inside URLs, AWS access key ids, private key
blocks, JWTs and a few well-known token prefixes. It errs towards over-redaction: a hidden
harmless value costs little, a leaked secret cannot be taken back.
"""

import re

MASK = "[REDACTED]"

# Words that make a key's value secret (DB_PASSWORD, client_secret, GITHUB_TOKEN, apiKey, ...).
_SECRET_WORD = r"(?:passw(?:or)?d|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credentials?)"
_KEY = r"[A-Za-z0-9_.\-]*" + _SECRET_WORD + r"[A-Za-z0-9_.\-]*"

_PATTERNS = [
    # Private key blocks, also a block cut off before its END line.
    (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)",
                re.DOTALL), MASK),
    # "password": "value" (JSON, also with escaped quotes inside the value).
    (re.compile(r'("' + _KEY + r'"\s*:\s*)"(?:[^"\\]|\\.)*"', re.IGNORECASE), r'\1"' + MASK + '"'),
    # Authorization headers: "Authorization: Bearer x", "authorization=Basic x".
    (re.compile(r"(\bauthorization\b[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token)\s+)?[^\s\"',;]+",
                re.IGNORECASE), r"\1" + MASK),
    (re.compile(r"\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*", re.IGNORECASE), r"\1 " + MASK),
    # key=value and key: value (env dumps, log lines, YAML); quoted values keep their quotes.
    (re.compile(r"(\b" + _KEY + r"[\"']?\s*(?:=|:(?!//))\s*)([\"'])(?:(?!\2).)*\2", re.IGNORECASE),
     r"\1\2" + MASK + r"\2"),
    (re.compile(r"(\b" + _KEY + r"[\"']?\s*(?:=|:(?!//))\s*)(?!\[REDACTED\])[^\s\"',;&)}\]]+",
                re.IGNORECASE), r"\1" + MASK),
    # scheme://user:password@host
    (re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^\s:/@]+:)[^\s@/]+(@)", re.IGNORECASE), r"\1" + MASK + r"\2"),
    # JWTs: base64url header.payload.signature, header always starts with '{"' -> eyJ.
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}"), MASK),
    # AWS access key ids, GitHub/Slack/OpenAI-style tokens.
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"), MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), MASK),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}"), MASK),
]


def redact(text):
    """Return `text` with every credential-shaped value replaced by [REDACTED]."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
