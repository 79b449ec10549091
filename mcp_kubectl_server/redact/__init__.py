"""Secret redaction: the one function every tool result passes through, in the server and again
in the loop (triage_agent imports this package; it imports nothing from either package).

`redact(text) -> text` replaces credential-shaped values with `[REDACTED]`, pass by pass:

    blocks     PEM/PGP blocks (also cut off before END), key bodies whose BEGIN line is gone
    formats    tokens of known vendor formats: one table, prefix + alphabet + length (formats.py)
    urls       credentials in URLs (.git-credentials), .pgpass lines (files.py)
    pairs      user:password with no scheme, Oracle USER/PASSWORD@, `curl -u USER:PASSWORD`
               and the like (pairs.py)
    headers    Authorization values, Cookie / Set-Cookie headers, bearer/basic credentials
    keys       values of secret-named keys in every key/value syntax, .netrc (keys.py)
    named      `value` beside a secret-named `name` (Kubernetes env in YAML or JSON; named.py)
    prose      `secret access key is ...`, random tokens beside a credential word (words.py)
    xml, mysql <password>value</password>; `mysql -pPASSWORD`
    shapes     long random-looking tokens anywhere, bare key-material lines (shapes.py), with
               a must-keep list: digests, UIDs, resourceVersions, object and label names, ...

It errs towards over-redaction: a hidden harmless value costs little, a leaked secret cannot be
taken back. What it cannot see: a secret with no known format, no random shape (a short or
dictionary-word password) and no credential word beside it. Every pattern runs in linear time
(logs and event messages may be written by an attacker), and each pass is gated by a cheap test
so ordinary text costs a few scans. Redact first, then cut: a cut can split a secret into pieces
no pattern recognises (callers cut only redacted text; get_logs reads a margin for this).
"""

from .blocks import redact_blocks, redact_key_bodies
from .files import redact_pgpass, redact_urls
from .formats import MASK, redact_formats
from .keys import credential_hits, is_secret_key, redact_assignments
from .named import redact_named_values
from .pairs import redact_pairs
from .shapes import redact_standalone
from .words import redact_headers, redact_mysql, redact_prose, redact_xml

__all__ = ["MASK", "is_secret_key", "redact"]


def redact(text):
    """Return `text` with every credential-shaped value replaced by [REDACTED]."""
    if not text:
        return text
    if "-----" in text:
        text = redact_key_bodies(redact_blocks(text))
    text = redact_pgpass(redact_pairs(redact_urls(redact_formats(text))))
    lowered = text.lower() if text.isascii() else None
    text = redact_headers(text, lowered)  # before keys: `token: Bearer x` hides x, too
    lowered = text.lower() if lowered is not None else None
    text, left = redact_assignments(text, credential_hits(text, lowered))
    text = redact_named_values(text, lowered)  # the gate only looks for two key names
    text = redact_prose(text, left)
    text = redact_mysql(redact_xml(text))
    return redact_standalone(text)
