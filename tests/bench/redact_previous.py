"""The redactor as it was before issue 18 (one module, about twenty patterns), kept only so that
make bench times the current one against it in the same run (tests/bench/redaction.py). Nothing
else imports it; it is not maintained."""

import bisect
import re

MASK = "[REDACTED]"

_SECRET_WORDS = {"password", "passwd", "pwd", "pass", "passphrase", "secret", "secrets",
                 "token", "credential", "credentials", "apikey", "accountkey", "cookie",
                 "privatekey", "accesskey", "secretkey", "sharedaccesskey", "sessiontoken"}
_SECRET_PAIRS = {("api", "key"), ("access", "key"), ("account", "key"), ("private", "key"),
                 ("secret", "key"), ("signing", "key"), ("encryption", "key"), ("auth", "key")}
_SECRET_INSIDE = re.compile(r"passw(?:or)?d|passphrase|secret|token|api[_-]?key|credential",
                            re.IGNORECASE)
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# A key and its separator: `=`, `=>`, `:` (not `://`), a quote (or an escaped one) before them,
# and the spaces, newlines or literal `\n` after. The key is matched atomically (lookahead plus
# backreference) and only where a run of key characters begins: linear time on any input.
_ASSIGNMENT = re.compile(r"(?<![A-Za-z0-9_.\-])(?=([A-Za-z0-9_.\-]+))\1"
                         r"((?:\\?[\"'])?[ \t]*(?:=>|=|:(?!//))(?:\s|\\n)*|[ \t]+)")
_QUOTED = {q: re.compile(q + r"(?:[^" + q + r"\\\n]|\\.)*" + q + "?") for q in "\"'"}
_ESCAPED = re.compile(r'\\"(?:[^\\\n]|\\[^"])*(?:\\"|$)', re.MULTILINE)
_BARE = re.compile(r"[^\s\"',;&)}\]<]+")
_BLOCK_SCALAR = re.compile(r"[|>][-+0-9]*[ \t]*(?=\n)")
_PROSE = re.compile(r"[a-z]{1,12}\b|\(")   # `API_TOKEN from secret x`: a word, not a value
_SET = re.compile(r"\bset[ \t]+$")

_LABEL = r"([A-Z0-9 ]*PRIVATE KEY|PGP [A-Z ]+|ENCRYPTED [A-Z ]+)"
_BEGIN = re.compile(r"-----BEGIN " + _LABEL + "-----")
_END = re.compile(r"-----END " + _LABEL + "-----")
# A block whose END line is missing runs on over the lines that look like its body or headers.
_CUT_BODY = re.compile(r"[^\n]*(?:\n(?=[ \t]*(?:[A-Za-z0-9+/=]{16}|\n|$|(?:Proc-Type|DEK-Info|"
                       r"Version|Comment|Hash|Charset): ))[^\n]*)*")
_BODY_LINE = re.compile(r"(?:^|\\n)[ \t\"']*([A-Za-z0-9+/]{40,}={0,2})(?=\\n|[ \t\"',]*$)",
                        re.MULTILINE)
_NEWLINE = re.compile(r"\\n|\n")
_B64_PIECE = re.compile(r"[ \t\"'\r]*[A-Za-z0-9+/=]*[ \t\"'\r]*")
_B64_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="
_XML = re.compile(r"(<([A-Za-z_][\w.\-:]*)(?:\s[^<>]*)?>)[^<]+")
_HEADERS = [
    (re.compile(r"(\bauthorization\b[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token)\s+)?"
                r"[^\s\"',;]+", re.IGNORECASE), r"\1" + MASK),
    (re.compile(r"(\b(?:set-)?cookie\b[\"']?[ \t]*[:=][ \t]*)[^\r\n\"']+", re.IGNORECASE),
     r"\1" + MASK),
    (re.compile(r"\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*", re.IGNORECASE), r"\1 " + MASK),
]
_TOKENS = [
    # scheme://user:password@host and scheme://:password@host (a scheme starts the match)
    (re.compile(r"((?<![a-z0-9+.\-])[a-z][a-z0-9+.\-]*://[^\s:/@]*:)[^\s@/]+(@)", re.IGNORECASE),
     r"\1" + MASK + r"\2"),
    (re.compile(r"(https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9/_\-]+"),
     r"\1" + MASK),
    # JWTs (a base64url JSON header starts eyJ), also cut by a truncation to one or two segments
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}(?:\.[A-Za-z0-9_\-]*){0,2}"), MASK),
    (re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"), MASK),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})"), MASK),
    (re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), MASK),
    (re.compile(r"\bx(?:ox[abprse]|app)-[A-Za-z0-9\-]{10,}"), MASK),
    (re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{10,}"), MASK),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"), MASK),
    (re.compile(r"\bhv[sbr]\.[A-Za-z0-9_\-]{20,}"), MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}"), MASK),
]
_MYSQL = re.compile(r"\b(?:mysql|mariadb)[a-z]*\b", re.IGNORECASE)
_DASH_P = re.compile(r"(\s-p)[^\s\"']+")


def is_secret_key(key):
    """True when a key's name says its value is secret (DB_PASSWORD, apiKey, AccountKey, ...)."""
    if _SECRET_INSIDE.search(key):
        return True
    words = [w.lower() for w in _WORDS.findall(key)]
    return any(w in _SECRET_WORDS for w in words) or any(
        pair in _SECRET_PAIRS for pair in zip(words, words[1:]))


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


def _masked_value(text, start, *, prose_kept):
    """(end, replacement) for the value at `start`, or None when there is nothing to hide."""
    quote = text[start:start + 1]
    if quote in _QUOTED:  # keeps its quotes; an unterminated one ends at the line end
        end = _QUOTED[quote].match(text, start).end()
        closed = end - start > 1 and text[end - 1] == quote
        return end, quote + MASK + (quote if closed else "")
    if text.startswith('\\"', start):  # JSON inside a JSON string: \"key\":\"value\"
        end = _ESCAPED.match(text, start).end()
        closed = end - start > 2 and text.endswith('\\"', 0, end)
        return end, '\\"' + MASK + ('\\"' if closed else "")
    if text.startswith(MASK, start) or (prose_kept and _PROSE.match(text, start)):
        return None
    if _BLOCK_SCALAR.match(text, start):
        return _block_body(text, start)
    bare = _BARE.match(text, start)
    return (bare.end(), MASK) if bare else None


def _spaced_form(text, match, key):
    """For `KEY VALUE` (spaces only): None to skip it, else whether a prose word is kept."""
    if key.startswith("-"):  # `--password VALUE` is a flag and its value
        return None if text.startswith("-", match.end()) else False
    if _SET.search(text, max(0, match.start() - 40), match.start()):
        return False           # `config set aws_secret_access_key VALUE`
    if "_" in key.strip("_"):
        return True            # `DB_PASSWORD hunter2`, but `API_TOKEN from secret x` is prose
    return None                # `the password expired`: prose


def redact_assignments(text):
    """Values of secret-named keys in every key/value form the module docstring lists."""
    out, pos = [], 0
    for match in _ASSIGNMENT.finditer(text):
        key = match.group(1)
        if match.start() < pos or not is_secret_key(key):
            continue
        prose_kept = False
        if not match.group(2).strip():
            prose_kept = _spaced_form(text, match, key)
            if prose_kept is None:
                continue
        masked = _masked_value(text, match.end(), prose_kept=prose_kept)
        if masked:
            out += [text[pos:match.end()], masked[1]]
            pos = masked[0]
    return "".join(out) + text[pos:]


def redact_xml(text):
    """<password>value</password>: the element's text, when the tag names a secret."""
    def hide(match):
        return match.group(1) + MASK if is_secret_key(match.group(2)) else match.group(0)
    return _XML.sub(hide, text)


def _body_start(text, pos, end):
    """Where the run of base64-only lines (real or escaped newlines) that ends at `end` starts;
    the first line may carry a prefix (`key=MIIE...`): only its base64 tail is taken."""
    start, separator = end, 0
    for piece in reversed(_NEWLINE.split(text[pos:end])):
        if not _B64_PIECE.fullmatch(piece):
            kept = piece.rstrip(" \t\"'\r")
            run = len(kept) - len(kept.rstrip(_B64_CHARS))
            return start - (len(piece) - len(kept) + run) if run >= 16 else start + separator
        start -= len(piece)
        separator = 2 if text.startswith("\\n", start - 2) else 1
        start -= separator
    return pos


def redact_blocks(text):
    """PEM and PGP blocks from BEGIN to the matching END, or over the body lines that follow a
    BEGIN whose END a cut removed. Linear: END positions are found once, then looked up."""
    ends = {}
    for match in _END.finditer(text):
        ends.setdefault(match.group(1), []).append(match.start())
    out, pos = [], 0
    for match in _BEGIN.finditer(text):
        if match.start() < pos:
            continue
        later = ends.get(match.group(1), [])
        i = bisect.bisect_left(later, match.end())
        stop = (later[i] + len(match.group(1)) + 14 if i < len(later)   # "-----END " + "-----"
                else _CUT_BODY.match(text, match.end()).end())
        out += [text[pos:match.start()], MASK]
        pos = stop
    return "".join(out) + text[pos:]


def redact_key_bodies(text):
    """Key material whose BEGIN line a log tail cut off: the base64 lines before an END line,
    and lines that are nothing but long base64 in mixed case with digits."""
    out, pos = [], 0
    for match in _END.finditer(text):
        start = max(_body_start(text, pos, match.start()), pos)
        out += [text[pos:start], MASK]
        pos = match.end()
    text = "".join(out) + text[pos:]

    def hide(match):
        body = match.group(1)
        mixed = any(c.isupper() for c in body) and any(c.islower() for c in body) and any(
            c.isdigit() for c in body)
        return match.group(0).replace(body, MASK) if mixed else match.group(0)
    return _BODY_LINE.sub(hide, text)


def redact_mysql(text):
    """`mysql -u app -pS3cret`: the password glued to -p, on lines that run a MySQL client."""
    if not _MYSQL.search(text):
        return text
    return "\n".join(_DASH_P.sub(r"\1" + MASK, line) if _MYSQL.search(line) else line
                     for line in text.split("\n"))


def redact(text):
    """Return `text` with every credential-shaped value replaced by [REDACTED]."""
    text = redact_blocks(text)
    text = redact_key_bodies(text)
    for pattern, replacement in _HEADERS:  # before assignments: `token: Bearer x` hides x, too
        text = pattern.sub(replacement, text)
    text = redact_assignments(text)
    text = redact_xml(text)
    text = redact_mysql(text)
    for pattern, replacement in _TOKENS:
        text = pattern.sub(replacement, text)
    return text
