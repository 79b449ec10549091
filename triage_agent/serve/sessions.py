"""Who may decide: the operators file, operator tokens, browser sessions and their CSRF tokens.

    operators file   one operator a line, `NAME SHA256HEX [slack:UXXXX]` (the SHA-256 of that
                     operator's token, hex; optionally the operator's Slack user id, whose
                     button clicks then decide as that operator); blank lines and `#`
                     comments are skipped
    API              Authorization: Bearer OPERATOR_TOKEN on every request
    browser          POST /login with the token -> a session cookie (HttpOnly, SameSite=Strict,
                     Path=/, Max-Age, Secure when served over TLS); each page that POSTs carries
                     the session's CSRF token in a hidden field; POST /logout ends the session

Sessions live in memory only: a restarted serve asks operators to log in again. A token is
checked against every hash in constant time per hash; the webhook token is never an operator's.
"""

import hashlib
import hmac
import re
import secrets
import threading
import time
from dataclasses import dataclass

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
HEX = re.compile(r"^[0-9a-f]{64}$")
SLACK = re.compile(r"^slack:([UW][A-Z0-9]{2,30})$")
COOKIE = "triage_session"
SESSION_SECONDS = 8 * 3600


class OperatorsError(Exception):
    """The operators file cannot be used; the message names the line."""


def token_hash(token) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Operators:
    """NAME -> token hash, from the operators file."""

    def __init__(self, hashes, slack=None):
        self.hashes = dict(hashes)
        self.slack = dict(slack or {})   # Slack user id -> NAME

    @classmethod
    def load(cls, path):
        """Read and check the operators file; OperatorsError says what is wrong where."""
        try:
            text = open(path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError) as exc:
            raise OperatorsError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
                                 ) from None
        hashes, slack = {}, {}
        for number, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) not in (2, 3) or not NAME.match(parts[0]) or \
                    not HEX.match(parts[1].lower()):
                raise OperatorsError(f"line {number}: expected `NAME SHA256HEX` or "
                                     "`NAME SHA256HEX slack:UXXXX` (a name of letters, digits, "
                                     "'.', '_', '@' or '-', then the 64 hex digits of the "
                                     "SHA-256 of that operator's token, then optionally the "
                                     "operator's Slack user id)")
            if parts[0] in hashes:
                raise OperatorsError(f"line {number}: operator {parts[0]} is named twice")
            hashes[parts[0]] = parts[1].lower()
            if len(parts) == 3:
                found = SLACK.match(parts[2])
                if not found:
                    raise OperatorsError(f"line {number}: {parts[2]!r} is not slack:USERID "
                                         "(a Slack user id such as slack:U0123ABCD)")
                if found.group(1) in slack:
                    raise OperatorsError(f"line {number}: Slack user {found.group(1)} is "
                                         f"already operator {slack[found.group(1)]}")
                slack[found.group(1)] = parts[0]
        if not hashes:
            raise OperatorsError("no operator in the file: nobody could decide an approval")
        return cls(hashes, slack)

    def name_for_slack(self, user_id):
        """The operator whose Slack user id this is, or None."""
        return self.slack.get(user_id) if isinstance(user_id, str) else None

    def name_for(self, token):
        """The operator whose token this is, or None."""
        if not isinstance(token, str) or not token:
            return None
        given, found = token_hash(token).encode(), None
        for name, digest in self.hashes.items():
            if hmac.compare_digest(given, digest.encode()):
                found = name
        return found

    @property
    def names(self):
        return sorted(self.hashes)


@dataclass
class Session:
    operator: str
    csrf: str
    expires: float


class Sessions:
    """Browser sessions: an unguessable id in the cookie, the operator and CSRF token here."""

    def __init__(self, *, seconds=SESSION_SECONDS, clock=time.time):
        self.seconds, self.clock = seconds, clock
        self._sessions, self._lock = {}, threading.Lock()

    def start(self, operator) -> tuple:
        """(session id, Session) for an operator who just logged in."""
        sid = secrets.token_urlsafe(32)
        session = Session(operator, secrets.token_urlsafe(32), self.clock() + self.seconds)
        with self._lock:
            now = self.clock()
            for old in [k for k, s in self._sessions.items() if s.expires <= now]:
                del self._sessions[old]
            self._sessions[sid] = session
        return sid, session

    def get(self, sid):
        """The live Session for a cookie's id, or None (unknown or expired)."""
        if not isinstance(sid, str) or not sid:
            return None
        with self._lock:
            session = self._sessions.get(sid)
            if session is not None and session.expires <= self.clock():
                del self._sessions[sid]
                session = None
        return session

    def end(self, sid):
        with self._lock:
            self._sessions.pop(sid, None)

    @staticmethod
    def csrf_ok(session, given) -> bool:
        """True when a form's CSRF field is this session's token."""
        return (session is not None and isinstance(given, str) and bool(given)
                and hmac.compare_digest(given.encode(), session.csrf.encode()))

    def cookie(self, sid, *, secure) -> str:
        """The Set-Cookie value that starts a session."""
        return (f"{COOKIE}={sid}; Path=/; Max-Age={int(self.seconds)}; HttpOnly; SameSite=Strict"
                + ("; Secure" if secure else ""))

    @staticmethod
    def clear_cookie(*, secure) -> str:
        return (f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"
                + ("; Secure" if secure else ""))


def session_id(cookie_header) -> "str | None":
    """The session id in a Cookie header, or None."""
    for part in (cookie_header or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return value
    return None
