"""User and password pairs outside a `scheme://user:password@host` URL (files.py has that one):
the password goes, the user stays.

    userinfo   `user:password@host[:port]` with no scheme (`HTTPS_PROXY=bob:pw@proxy:3128`),
               not an image reference (`nginx:1.25@sha256:...`) nor `mailto:bob@host`
    oracle     `USER/PASSWORD@` of Oracle connect strings: after `jdbc:oracle:thin:` (or
               `oci:`), after an Oracle client (`sqlplus`, `rman target`, `expdp`, ...,
               `connect`) and in `userid=`; a quoted password (`scott/"p@ss w"@host`) whole
    flags      `-u USER:PASSWORD` and the like, glued (`-uUSER:PASSWORD`), spaced or after `=`,
               quoted or not: curl's `-u`/`--user`, `-U`/`--proxy-user`, and any long flag whose
               last word is user, creds, credentials or auth (`--creds`, `--src-creds`,
               `--basic-auth`); `UID:GID` (two numbers, docker's `--user 1000:1000`) stays

Each pattern starts from a literal a scan finds cheaply (a pair's `:`, an Oracle word in the
lower-cased text, a flag's `-`) and reads a bounded stretch: linear time on any input.
"""

import re

from .formats import MASK

# `user:password@host`: found from its `@` (a literal: a fast scan), where a host follows (a DNS
# name or an IP, then a port, a path, the end or a delimiter); the run before it is read
# backwards and cut at its first `:`. The password is free of spaces, quotes, `/` and `@`.
_HOST = re.compile(r"([A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*)(?::\d{1,5})?(?:[/\s\"',;)\]]|$)")
_NOT_IN_RUN = frozenset(" \t\n\r/@\"'<>`")
_USER_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                        "._~!$&*+%-_")
_NOT_BEFORE_USER = frozenset("/:@")   # `scheme://user:` is files.py's, `a:b:c@` one pair
_NOT_USERS = {"mailto", "sip", "sips", "tel", "xmpp", "acct", "urn"}
_DIGESTS = {"sha1", "sha256", "sha384", "sha512", "md5"}
# a quoted password (`"p@ss w"`, also `\"p@ss w\"` inside a JSON string) or a bare one
_ORACLE_USER = (r"(\"[^\"\n]*\"|[A-Za-z0-9_$#.\-\[\]]+)/"
                r"(\\?\"(?:[^\"\\\n]|\\[^\"\n])*\\?\"|[^\s@\"'/\\]+)")
# Each starts at a word the lower-cased text is scanned for (_ORACLE_WORDS). After a JDBC or
# connect prefix the `@host` must follow; an Oracle client's argument may end there (`sqlplus
# scott/tiger`, a local database).
_ORACLE_AT = re.compile(r"(?:(?:jdbc:)?oracle:(?:thin|oci8?|kprb):|userid=|conn(?:ect)?[ \t]+)"
                        + _ORACLE_USER + "(?=@)", re.IGNORECASE)
_ORACLE_CLIENT = re.compile(r"(?:sqlplus|sqlcl|rman|expdp|impdp|sqlldr|dgmgrl)"
                            r"(?:[ \t]+(?:-[A-Za-z]+|target|auxiliary|catalog))*[ \t=]+"
                            + _ORACLE_USER + "(?=@|[\\s\"']|$)", re.IGNORECASE)
_ORACLE_WORDS = re.compile(r"jdbc:|oracle:|userid=|conn|sqlplus|sqlcl|rman|expdp|impdp|sqlldr"
                           r"|dgmgrl")
# `-u`, `-U` or a long flag ending in user, creds, credentials or auth, found from its `-`; the
# character before it (a space, a quote, `[`, `,`, `(`, `=` or none) is checked by hand
_FLAG = re.compile(r"-(-[A-Za-z\-]*(?:user|creds|credentials|auth)|[uU])"
                   r"(=|[ \t]+|\\?\"?,[ \t]*\\?\"|(?<=-[uU]))((?:\\?[\"'])?)")
_BEFORE_FLAG = frozenset(" \t\n\r\"'[,(=")
_PAIR = re.compile(r"([A-Za-z0-9._~@$\\\-]+):")
_BARE_END = re.compile(r"[^\s\"'`,\]]*")


def redact_pairs(text):
    """The passwords of user:password pairs in the forms the module lists."""
    if "@" in text and ":" in text:
        text = _redact_userinfo(text)
    if "/" in text:
        text = _redact_oracle(text)
    return _redact_flags(text) if "-" in text else text


def _redact_userinfo(text):
    out, pos, at = [], 0, text.find("@")
    while at != -1:
        host = _HOST.match(text, at + 1)
        begin = at
        while begin > max(pos, at - 512) and text[begin - 1] not in _NOT_IN_RUN:
            begin -= 1
        colon = text.find(":", begin, at)
        user = colon
        while user > begin and text[user - 1] in _USER_CHARS:
            user -= 1
        if (host and colon > user and colon + 1 < at
                and not (user and text[user - 1] in _NOT_BEFORE_USER)
                and text[user:colon].lower() not in _NOT_USERS
                and host.group(1).lower() not in _DIGESTS
                and not text.startswith(MASK, colon + 1)):
            out += [text[pos:colon + 1], MASK]
            pos = at
        at = text.find("@", at + 1)
    return "".join(out) + text[pos:] if out else text


def _redact_oracle(text):
    lowered = text.lower() if text.isascii() else None
    if lowered is None or not _ORACLE_WORDS.search(lowered):
        return text if lowered is not None else _redact_oracle_slow(text)
    out, pos = [], 0
    for word in _ORACLE_WORDS.finditer(lowered):
        at = word.start()
        if at < pos or (at and lowered[at - 1].isalnum()):
            continue
        match = _ORACLE_AT.match(text, at) or _ORACLE_CLIENT.match(text, at)
        if match:
            out += [text[pos:match.start(2)], MASK]
            pos = match.end(2)
    return "".join(out) + text[pos:] if out else text


def _redact_oracle_slow(text):
    """The same for text that is not ASCII (its lower-cased copy may shift positions)."""
    for pattern in (_ORACLE_AT, _ORACLE_CLIENT):
        text = re.sub(r"\b" + pattern.pattern, lambda m: m.group(0)[:m.start(2) - m.start(0)]
                      + MASK, text, flags=re.IGNORECASE)
    return text


def _redact_flags(text):
    out, pos = [], 0
    for flag in _FLAG.finditer(text):
        if flag.start() < pos or (flag.start() and text[flag.start() - 1] not in _BEFORE_FLAG):
            continue
        quote = flag.group(3)
        pair = _PAIR.match(text, flag.end())
        if not pair:
            continue
        start = pair.end()
        if text.startswith(MASK, start):   # hidden already (redact is idempotent)
            continue
        end = _value_end(text, start, quote)
        user, password = pair.group(1), text[start:end]
        if not password or (user.isdigit() and password.isdigit()):   # UID:GID
            continue
        out += [text[pos:start], MASK]
        pos = end
    return "".join(out) + text[pos:] if out else text


def _value_end(text, start, quote):
    """Where a flag's password ends: at its closing quote, else at a space or a quote."""
    if quote:
        end = text.find(quote, start)
        line_end = text.find("\n", start)
        if end != -1 and (line_end == -1 or end < line_end):
            return end
    return _BARE_END.match(text, start).end()
