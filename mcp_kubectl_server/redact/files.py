"""Credentials in URLs and in credential-file lines that name no key.

    urls      scheme://user:password@host (also an empty user: redis://:pw@host), the form of
              .git-credentials; scheme://TOKEN@host when the user part looks random
    pgpass    .pgpass lines, hostname:port:database:username:password (port a number or *)

The .netrc form (`machine HOST login USER password VALUE`) is a key/value form (keys.py) and a
docker config.json `"auth"` is a weak key whose value is base64 of user:password (shapes.py).
"""

import re

from .formats import MASK
from .shapes import kept, looks_random

_USERINFO = re.compile(r"((?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]*://[^\s:/@]*:)[^\s@/]+(@)",
                       re.IGNORECASE)
_TOKEN_USER = re.compile(r"((?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]*://)([A-Za-z0-9_\-.~%]{16,})@",
                         re.IGNORECASE)
# `:port:` (or `:*:`) followed by two more fields: the middle of a .pgpass line.
_PGPASS_GATE = re.compile(r":(?:\d{1,5}|\*):(?=[^\s:]+:[^\s:]+:\S)")
_PGPASS = re.compile(r"([^\s:\"'=]+:(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:)((?:[^\s\\:]|\\.)+)")


def redact_urls(text):
    if "://" not in text:
        return text
    text = _USERINFO.sub(r"\1" + MASK + r"\2", text)

    def hide_user(match):
        user = match.group(2)
        random = looks_random(user, strict=False) and not kept(user, user, 0)
        return match.group(1) + MASK + "@" if random else match.group(0)
    return _TOKEN_USER.sub(hide_user, text)


def redact_pgpass(text):
    out, pos = [], 0
    for gate in _PGPASS_GATE.finditer(text):
        if gate.start() < pos:
            continue
        start = gate.start()
        while start and not text[start - 1].isspace() and text[start - 1] not in "\"'=:":
            start -= 1
        match = _PGPASS.match(text, start)
        if match:
            out += [text[pos:match.start(2)], MASK]
            pos = match.end()
    return "".join(out) + text[pos:] if out else text
