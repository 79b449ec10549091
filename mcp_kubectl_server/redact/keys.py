"""Values of secret-named keys, in every key/value syntax: `key=value`, `key: value` (also on the
next lines, YAML block scalars), `"key": "value"`, `\\"key\\":\\"value\\"` (JSON inside JSON),
`key => value`, `<key>value</key>`, `--key value`, `set KEY VALUE`, `KEY VALUE`, and the
`.netrc` form `machine HOST login USER password VALUE`.

A key is found from a credential word (credential_hits): the scan runs over a lower-cased copy
for a few stems only, so text with no such word costs one pass. A *strong* key (password, token,
secret, api key, ...) hides any value; a *weak* one (auth, key, signature, session, ...) hides
a value only when it looks like one (shapes.secret_value): `auth: enabled` stays, a docker
config.json `"auth": "<base64 of user:password>"` goes.
"""

import functools
import re

from .formats import MASK
from .shapes import secret_value

_SECRET_WORDS = {"password", "passwd", "pwd", "pass", "passphrase", "secret", "secrets",
                 "token", "credential", "credentials", "apikey", "accountkey", "cookie",
                 "privatekey", "accesskey", "secretkey", "sharedaccesskey", "sessiontoken"}
_SECRET_PAIRS = {("api", "key"), ("access", "key"), ("account", "key"), ("private", "key"),
                 ("secret", "key"), ("signing", "key"), ("encryption", "key"), ("auth", "key"),
                 ("master", "key"), ("license", "key"), ("client", "secret")}
_WEAK_WORDS = {"auth", "key", "private", "signature", "sig", "session", "sessionid", "hmac",
               "salt", "dsn", "otp", "bearer", "authkey", "cred", "creds", "passcode"}
_SECRET_INSIDE = re.compile(r"passw(?:or)?d|passphrase|secret|token|api[_-]?key|credential",
                            re.IGNORECASE)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# The credential stems, searched in a lower-cased copy of the text (a literal alternation there
# is far faster than an IGNORECASE one).
STEMS = re.compile(r"pass|pwd|secret|token|credential|cred|key|auth|sig|session|private|hmac"
                   r"|salt|dsn|otp|cookie|bearer")
_STEMS_ANY_CASE = re.compile(STEMS.pattern, re.IGNORECASE)
KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
# A key and its separator: `=`, `=>`, `:` (not `://`), a quote (or an escaped one) before them,
# and the spaces, newlines or literal `\n` after. The key is matched atomically (lookahead plus
# backreference): linear time on any input.
_ASSIGNMENT = re.compile(r"(?=([A-Za-z0-9_.\-]+))\1"
                         r"((?:\\*[\"'])?[ \t]*(?:=>|=|:(?!//))(?:\s|\\n)*|[ \t]+)")
_QUOTED = {q: re.compile(q + r"(?:[^" + q + r"\\\n]|\\.)*" + q + "?") for q in "\"'"}
_ESCAPED = re.compile(r'\\"(?:[^\\\n]|\\[^"])*(?:\\"|$)', re.MULTILINE)
_DEEPER = re.compile(r'\\{3,}"')   # JSON in JSON in JSON (a YAML or JSON string of it): \\\"
_BARE = re.compile(r"[^\s\"',;&)}\]<]+")
_BLOCK_SCALAR = re.compile(r"[|>][-+0-9]*[ \t]*(?=\n)")
_PROSE = re.compile(r"[a-z]{1,12}\b|\(")   # `API_TOKEN from secret x`: a word, not a value
# After `KEY: ` in a wrapped error (`failed to fetch oauth token: unexpected status from POST ...:
# 401 Unauthorized`): words that open an error's wording, then two more lowercase words, or an
# HTTP status and its reason phrase. Any three lowercase words would keep a passphrase
# (`password: correct horse battery staple`), so the first word must say something went wrong.
_ERROR_WORDS = ("unexpected|failed|failure|error|unable|cannot|could|invalid|unauthorized|"
                "forbidden|denied|missing|expired|not|no|timeout|timed|refused|rejected|bad")
_ERROR_PROSE = re.compile(rf"(?:{_ERROR_WORDS}) [a-z]{{2,12}} [a-z]{{2,12}}\b"
                          r"|[1-5][0-9]{2} [A-Z][a-z]+(?: [A-Z][a-z]+)*\b")
# After a strong key's `KEY: first-word`, the words up to the line's end are the rest of the
# value (a YAML scalar runs to the end of its line: `password: correct horse battery staple`),
# until a word that starts another pair (`user=bob`, `host:`), a comment (` #`) or punctuation.
_PHRASE_REST = re.compile(r"(?:[ \t]+(?![^\s=:]+[=:])[^\s\"',;&)}\]<#]+)*")
_SET = re.compile(r"\bset[ \t]+$")
# `KEY=True`: a condition's status (`PasswordRotation=False`) or a switch, not a credential
_STATES = {"true", "false", "unknown", "null", "none"}
# .netrc: `password` right after `machine HOST` (or `default`) and its `login USER` / `account
# A` / `port P` pairs, on one line or several. `login failed; password reset ...` and `the
# default password rotation job` are prose.
_NETRC = re.compile(r"(?:^|[\s\"']|\\n)(?:machine(?:\s|\\n)+[^\s\\]+(?:(?:\s|\\n)+(?:login|account|port)"
                    r"(?:\s|\\n)+[^\s\\]+)*|default(?:(?:\s|\\n)+(?:login|account|port)(?:\s|\\n)+"
                    r"[^\s\\]+)+)(?:\s|\\n)+$")   # `\\n`: the lines of a JSON or YAML string


# A key that names a Secret object rather than holding a credential: `secretName`, `secretRef`,
# `secretKeyRef`, `secret_name`, `imagePullSecrets`, `existingSecret`. The name is what an
# operator needs (which Secret a volume, an env or an Ingress's TLS uses) and is no secret.
_REFERENCE_LAST = {"name", "names", "ref", "refs", "namespace"}


def names_a_secret(words):
    """True when a key's words (lowercase) say its value is the name of a Secret object."""
    return bool(words) and (words[-1] in _REFERENCE_LAST or words[0] == "existing"
                            or words[-2:] == ["pull", "secrets"])


@functools.lru_cache(maxsize=4096)  # pure; the same keys come back in every result (pod=, code=)
def is_secret_key(key):
    """True when a key's name says its value is secret (DB_PASSWORD, apiKey, AccountKey, ...);
    a key naming a Secret object (secretName, imagePullSecrets) is not one."""
    words = [w.lower() for w in _WORDS.findall(key)]
    if names_a_secret(words):
        return False
    if _SECRET_INSIDE.search(key):
        return True
    return any(w in _SECRET_WORDS for w in words) or any(
        pair in _SECRET_PAIRS for pair in zip(words, words[1:]))


def names_credential(key):
    """True when a key's last word is the credential itself (`DB_PASSWORD`, `token`), not a
    property of one (`PASSWORD_RESET_TTL`)."""
    words = [w.lower() for w in _WORDS.findall(key)]
    return bool(words) and (is_secret_key(words[-1]) or words[-1] == "key")


@functools.lru_cache(maxsize=4096)
def is_weak_key(key):
    """True when a key's name may hold a secret, depending on its value (auth, key, sig, ...)."""
    words = [w.lower() for w in _WORDS.findall(key)]
    return bool(words) and words[-1] in _WEAK_WORDS


_PAIR_FIRST = {"api", "access", "account", "private", "secret", "signing", "encryption", "auth",
               "master", "license", "client", "app", "deploy", "service", "bot"}


def key_strength(text, start, key):
    """'strong', 'weak' or None for the key `key` at `start`; the word before it counts
    (`api key`, `secret access key`)."""
    if is_secret_key(key):
        return "strong"
    lowered = key.lower().lstrip("-")
    if lowered in ("key", "keys"):
        before = text[max(0, start - 40):start].split()
        if before and before[-1].lower().strip("\"'") in _PAIR_FIRST:
            return "strong"
    return "weak" if is_weak_key(key) else None


def credential_hits(text, lowered):
    """Start positions of the keys (runs of key characters) that hold a credential stem."""
    hits = (_STEMS_ANY_CASE if lowered is None else STEMS).finditer(
        text if lowered is None else lowered)
    starts, last_hit = [], -1
    for hit in hits:
        start = hit.start()
        while start and text[start - 1] in KEY_CHARS:
            start -= 1
            if start == last_hit:  # the same key as the hit before: linear on `passwordpassword`
                start = starts[-1]
                break
        last_hit = hit.start()
        if not starts or starts[-1] != start:
            starts.append(start)
    return starts


def _block_body(text, start):
    """(end, mask) hiding a YAML block scalar (`key: |`): the lines below the key's line that
    are more indented than it."""
    line_start = text.rfind("\n", 0, start) + 1
    key_line = text[line_start:start]
    indent = len(key_line) - len(key_line.lstrip(" "))
    end = text.find("\n", start)
    while end != -1:
        line_end = text.find("\n", end + 1)
        line = text[end + 1: len(text) if line_end == -1 else line_end]
        if line.strip() and len(line) - len(line.lstrip(" ")) <= indent:
            break
        end = line_end
    return (len(text) if end == -1 else end), MASK


def _masked_value(text, start, *, prose_kept, weak, colon=False):
    """(end, replacement) for the value at `start`, or None when there is nothing to hide."""
    quote = text[start:start + 1]
    if quote in _QUOTED:  # keeps its quotes; an unterminated one ends at the line end
        end = _QUOTED[quote].match(text, start).end()
        closed = end - start > 1 and text[end - 1] == quote
        if weak and not secret_value(text[start + 1:end - closed]):
            return None
        return end, quote + MASK + (quote if closed else "")
    if text.startswith('\\"', start):  # JSON inside a JSON string: \"key\":\"value\"
        end = _ESCAPED.match(text, start).end()
        closed = end - start > 2 and text.endswith('\\"', 0, end)
        if weak and not secret_value(text[start + 2:end - 2 * closed]):
            return None
        return end, '\\"' + MASK + ('\\"' if closed else "")
    deeper = _DEEPER.match(text, start)
    if deeper:   # `\\\"value\\\"`: up to the same escaped quote, on this line
        opener, line_end = deeper.group(0), text.find("\n", start)
        end = text.find(opener, deeper.end(), len(text) if line_end == -1 else line_end)
        closed = end != -1
        end = end + len(opener) if closed else (len(text) if line_end == -1 else line_end)
        if weak and not secret_value(text[deeper.end():end - len(opener) * closed]):
            return None
        return end, opener + MASK + (opener if closed else "")
    if text.startswith(MASK, start):  # an earlier pass hid it: done, nothing left to look at
        return start + len(MASK), MASK
    if text.startswith("{", start):   # a mapping (`"secret": {"secretName": ...}`): its own
        return None                   # keys are looked at one by one
    if (prose_kept and _PROSE.match(text, start)) or (colon and _ERROR_PROSE.match(text, start)):
        return None
    if _BLOCK_SCALAR.match(text, start):
        return None if weak else _block_body(text, start)
    bare = _BARE.match(text, start)
    if not bare or (weak and not secret_value(bare.group(0))) or (
            bare.group(0).lower() in _STATES and not colon):
        return None
    end = bare.end()
    if text.startswith("]", end) and text.endswith(MASK[:-1], start, end):
        end += 1   # the value holds a mask an earlier pass put there (a URL's password): all of it
    return (_PHRASE_REST.match(text, end).end() if colon and not weak else end), MASK


def _spaced_form(text, match, key):
    """For `KEY VALUE` (spaces only): None to skip it, else whether a prose word is kept."""
    if key.startswith("-"):  # `--password VALUE` is a flag and its value
        return None if text.startswith("-", match.end()) else False
    if _SET.search(text, max(0, match.start() - 40), match.start()):
        return False           # `config set aws_secret_access_key VALUE`
    if "_" in key.strip("_"):
        return True            # `DB_PASSWORD hunter2`, but `API_TOKEN from secret x` is prose
    if key.lower() in ("password", "passwd") and _NETRC.search(
            text[max(0, match.start() - 200):match.start()]):
        return False           # .netrc: `machine HOST login USER password VALUE`
    return None                # `the password expired`: prose


_LINE_BREAK = re.compile(r"\n|\\n")
_ENTRY = re.compile(r"[-#=*<\[{]|[\w.\-\"']+:(?:\s|$)")   # a list item, a rule, another key


def _indent(text, start):
    """Spaces before `start` since its line began (a real newline or an escaped `\\n`)."""
    window = max(0, start - 400)   # bounded: many keys on one long line stay linear
    begin = max(text.rfind("\n", window, start) + 1, text.rfind("\\n", window, start) + 2,
                window)
    line = text[begin:start]
    return len(line) - len(line.lstrip(" \t"))


def _value_line_belongs(text, key_start, value_start):
    """For a value on a line below its key (`password:` then a newline): True when that line is
    the key's value, not what follows it. A YAML scalar below its key is indented deeper and is
    not another entry (`secretName: x`, `- name: x`); a line at the key's indentation or less is
    the value only when it is one bare word (a tool's own framing line after a log's last
    `password:`, `--- end log lines ---`, is not)."""
    if not _LINE_BREAK.search(text, key_start, value_start):
        return True
    end = _LINE_BREAK.search(text, value_start)
    line = text[value_start:end.start() if end else len(text)]
    if _ENTRY.match(line):
        return False
    return _indent(text, value_start) > _indent(text, key_start) or (
        bool(line.strip()) and len(line.split()) == 1)


def redact_assignments(text, starts):
    """Values of secret-named keys at `starts` (credential_hits) in every form the module lists;
    returns (text, starts of the keys it left alone) for the prose and shape rules."""
    out, pos, left, shift = [], 0, [], 0   # shift: how far the output has moved a position
    for start in starts:
        if start < pos:
            continue
        masked = _assignment(text, start)
        if masked is None:
            left.append(start + shift)
            continue
        value_start, end, replacement = masked
        out += [text[pos:value_start], replacement]
        shift += len(replacement) - (end - value_start)
        pos = end
    return "".join(out) + text[pos:], left


def _assignment(text, start):
    """(value start, value end, replacement) for a key at `start` whose value is hidden."""
    match = _ASSIGNMENT.match(text, start)
    strength = match and key_strength(text, start, match.group(1))
    if not strength:
        return None
    key, strong = match.group(1), strength == "strong"
    if not _value_line_belongs(text, start, match.end()):
        return None
    prose_kept = False
    if not match.group(2).strip():
        prose_kept = _spaced_form(text, match, key) if strong else None
        if prose_kept is None:
            return None
    masked = _masked_value(text, match.end(), prose_kept=prose_kept, weak=not strong,
                           colon=match.group(2).strip(" \t") == ":")
    return (match.end(), *masked) if masked else None
