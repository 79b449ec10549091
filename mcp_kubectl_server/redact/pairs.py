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

Each pattern starts from a literal a scan finds cheaply (`@`, `/`, a flag's dash), and reads a
bounded stretch: linear time on any input.
"""

import re

from .formats import MASK

# user:password@host, the user and the password free of spaces, quotes and `/`; the host a DNS
# name or an IP, then a port, a path, the end or a delimiter
_USERINFO = re.compile(r"(?<![\w.+\-/:@%~!$&*])([A-Za-z0-9._~!$&*+%\-]+:)([^\s/@\"'<>`]+)@"
                       r"(?=([A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*)(?::\d{1,5})?(?:[/\s\"',;)\]]|$))")
_NOT_USERS = {"mailto", "sip", "sips", "tel", "xmpp", "acct", "urn"}
_DIGESTS = {"sha1", "sha256", "sha384", "sha512", "md5"}
# a quoted password (`"p@ss w"`, also `\"p@ss w\"` inside a JSON string) or a bare one
_ORACLE_USER = (r"(\"[^\"\n]*\"|[A-Za-z0-9_$#.\-\[\]]+)/"
                r"(\\?\"(?:[^\"\\\n]|\\[^\"\n])*\\?\"|[^\s@\"'/\\]+)")
# after a JDBC or connect prefix the `@host` must follow; an Oracle client's argument may end
# there (`sqlplus scott/tiger`, a local database)
_ORACLE = [re.compile(r"(?:\b(?:jdbc:)?oracle:(?:thin|oci8?|kprb):|\buserid=|\bconn(?:ect)?[ \t]+)"
                      + _ORACLE_USER + "(?=@)", re.IGNORECASE),
           re.compile(r"\b(?:sqlplus|sqlcl|rman|expdp|impdp|sqlldr|dgmgrl)"
                      r"(?:[ \t]+(?:-[A-Za-z]+|target|auxiliary|catalog))*[ \t=]+" + _ORACLE_USER + "(?=@|[\\s\"']|$)", re.IGNORECASE)]
_FLAG = re.compile(r"(?<![^\s\"'\[,(=])(-[uU]|--[A-Za-z\-]*(?:user|creds|credentials|auth))"
                   r"(=|[ \t]+|\\?\"?,[ \t]*\\?\"|(?<=-[uU]))((?:\\?[\"'])?)")
_PAIR = re.compile(r"([A-Za-z0-9._~@$\\\-]+):")
_BARE_END = re.compile(r"[^\s\"'`,\]]*")


def redact_pairs(text):
    """The passwords of user:password pairs in the forms the module lists."""
    if "@" in text:
        text = _USERINFO.sub(_hide_userinfo, text)
    if "/" in text:
        for pattern in _ORACLE:
            text = pattern.sub(lambda m: m.group(0)[:m.start(2) - m.start(0)] + MASK, text)
    return _redact_flags(text) if "-" in text else text


def _hide_userinfo(match):
    if match.group(1)[:-1].lower() in _NOT_USERS or match.group(3).lower() in _DIGESTS:
        return match.group(0)
    return match.group(1) + MASK + "@"


def _redact_flags(text):
    out, pos = [], 0
    for flag in _FLAG.finditer(text):
        if flag.start() < pos:
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
