"""PromQL's lexer: query text -> tokens, as Prometheus 2.42 reads it (promql/parser/lex.go).

Three states. Statements: operators, keywords (case-insensitive; `inf` and `nan` are numbers),
identifiers (`[A-Za-z_:][A-Za-z0-9_:]*`, a metric identifier when it holds a colon), numbers
(decimal, hex, exponent), durations (`1h30m`, units y w d h m s ms in that order), strings.
Inside braces: label names, the matchers `= != =~ !~`, strings, `,` and `}`. Inside brackets: a
duration straight after `[`, an optional `:` and step, `]`. A comment runs from `#` to the end
of the line, in statements and in braces, and is dropped. Strings take Go's escapes (`\n`,
`\x41`, `\101`, `\u00e9`, `\U0001F600`, the string's own quote) in '...' and "..."; `...` is raw.
A string's value keeps bytes that are not UTF-8 (`"\xff"`) as surrogate escapes, so that
rendering it gives back the same bytes.
"""

import re
from typing import NamedTuple

KEYWORDS = frozenset((
    "and", "or", "unless", "atan2",
    "sum", "avg", "count", "min", "max", "group", "stddev", "stdvar", "topk", "bottomk",
    "count_values", "quantile",
    "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "start", "end"))
NUMBER_WORDS = frozenset(("inf", "nan"))
_SPACE = " \t\n\r"
_DEC = "0123456789"
_HEX = "0123456789abcdefABCDEF"
_ALPHA = frozenset("_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ALNUM = _ALPHA | frozenset(_DEC)
_SINGLE = frozenset(",*/%+-^@")
_COMMENT_RE = re.compile(r"#[^\r\n]*")
_SPACES_RE = re.compile(r"[ \t\n\r]+")
_WORD_RE = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_LABEL_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN_RE = {'"': re.compile('[^"\\\\\n\ufffd]*'), "'": re.compile("[^'\\\\\n\ufffd]*")}
_SIMPLE_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92}
_CODE_ESCAPES = {"x": (2, 16, 255), "u": (4, 16, 0x10FFFF), "U": (8, 16, 0x10FFFF)}


class PromQLError(Exception):
    """A query that is refused: it does not parse, or it would leave its namespace. The
    message is written for the model that wrote the query."""


class Token(NamedTuple):
    """kind: NUMBER DURATION STRING IDENT METRIC_IDENT EOF, a keyword, or the punctuation
    itself ("(", "=~", ...); text: the source text; pos: the index of its first character."""
    kind: str
    text: str
    pos: int
    value: str = ""   # a STRING's unquoted value


def where(text, pos):
    """'line:column' (both from 1) of a character index in the query."""
    line_start = text.rfind("\n", 0, pos) + 1
    return f"{text.count(chr(10), 0, pos) + 1}:{pos - line_start + 1}"


def parse_error(text, pos, message):
    """The PromQLError for a syntax or type error at `pos`."""
    return PromQLError(f"PromQL parse error at {where(text, pos)}: {message}")


def tokenize(text):
    """The tokens of a query, ending with EOF; PromQLError on a lexical error."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise parse_error(text, exc.start, "the query holds a character that is not valid "
                          "Unicode (a lone surrogate)") from None
    return _Lexer(text).run()


class _Lexer:
    def __init__(self, text):
        self.text, self.pos, self.tokens = text, 0, []
        self.parens, self.brace, self.bracket, self.colon = 0, False, False, False

    def fail(self, pos, message):
        raise parse_error(self.text, pos, message)

    def emit(self, kind, start, end, value=""):
        self.tokens.append(Token(kind, self.text[start:end], start, value))
        self.pos = end

    def run(self):
        text = self.text
        while True:
            if text.startswith("#", self.pos):
                self.pos = _COMMENT_RE.match(text, self.pos).end()
            elif self.brace:
                self.inside_braces()
            elif self.pos >= len(text):
                if self.parens:
                    self.fail(self.pos, "unclosed left parenthesis")
                if self.bracket:
                    self.fail(self.pos, "unclosed left bracket")
                self.emit("EOF", self.pos, self.pos)
                return self.tokens
            else:
                self.statement()

    def statement(self):
        text, i = self.text, self.pos
        c, nxt = text[i], text[i + 1:i + 2]
        if c in _SPACE:
            self.pos = _SPACES_RE.match(text, i).end()
        elif c in _SINGLE:
            self.emit(c, i, i + 1)
        elif c == "=":
            if nxt == "~":
                self.fail(i, "unexpected character after '=': '~'")
            self.emit("==", i, i + 2) if nxt == "=" else self.emit("=", i, i + 1)
        elif c == "!":
            if nxt != "=":
                self.fail(i, f"unexpected character after '!': {nxt or 'end of input'!r}")
            self.emit("!=", i, i + 2)
        elif c in "<>":
            self.emit(c + "=", i, i + 2) if nxt == "=" else self.emit(c, i, i + 1)
        elif c in _DEC or (c == "." and nxt and nxt in _DEC):
            self.number_or_duration(i)
        elif c in "\"'`":
            self.string(i)
        elif c in _ALPHA or c == ":":
            self.word_or_colon(i, c)
        else:
            self.punctuation(i, c)

    def punctuation(self, i, c):
        if c == "(":
            self.parens += 1
        elif c == ")":
            self.parens -= 1
            if self.parens < 0:
                self.fail(i, "unexpected right parenthesis ')'")
        elif c == "{":
            self.brace = True
        elif c == "[":
            if self.bracket:
                self.fail(i, "unexpected left bracket '['")
            self.emit("[", i, i + 1)
            self.bracket, self.colon = True, False
            self.duration_after_bracket()
            return
        elif c == "]":
            if not self.bracket:
                self.fail(i, "unexpected right bracket ']'")
            self.bracket = False
        else:
            self.fail(i, f"unexpected character: {c!r}")
        self.emit(c, i, i + 1)

    def word_or_colon(self, i, c):
        if self.bracket:
            # Prometheus lexes any letter here as ':' (`x[5m a]` means `x[5m:]`); only ':' is.
            if c != ":" or self.colon:
                self.fail(i, f"unexpected {c!r} inside brackets")
            self.colon = True
            self.emit(":", i, i + 1)
            return
        text, end = self.text, _WORD_RE.match(self.text, i).end()
        word = text[i:end].lower()
        if word in NUMBER_WORDS:
            self.emit("NUMBER", i, end)
        elif word in KEYWORDS:
            self.emit(word, i, end)
        else:
            self.emit("METRIC_IDENT" if ":" in word else "IDENT", i, end)

    def inside_braces(self):
        text, i = self.text, self.pos
        if i >= len(text):
            self.fail(i, "unexpected end of input inside braces")
        c, nxt = text[i], text[i + 1:i + 2]
        if c in _SPACE:
            self.pos = _SPACES_RE.match(text, i).end()
        elif c in _ALPHA:
            self.emit("IDENT", i, _LABEL_NAME_RE.match(text, i).end())
        elif c == ",":
            self.emit(",", i, i + 1)
        elif c in "\"'`":
            self.string(i)
        elif c == "=":
            self.emit("=~", i, i + 2) if nxt == "~" else self.emit("=", i, i + 1)
        elif c == "!":
            if nxt not in ("~", "="):
                self.fail(i, f"unexpected character after '!' inside braces: "
                             f"{nxt or 'end of input'!r}")
            self.emit("!" + nxt, i, i + 2)
        elif c == "}":
            self.brace = False
            self.emit("}", i, i + 1)
        elif c == "{":
            self.fail(i, "unexpected left brace '{'")
        else:
            self.fail(i, f"unexpected character inside braces: {c!r}")

    # Numbers and durations (lex.go's scanNumber and acceptRemainingDuration).

    def scan_number(self, i):
        """(end, ok): the end of a number at i; ok when no letter or digit follows it."""
        text, digits = self.text, _DEC
        if text.startswith("0", i):
            i += 1
            if text[i:i + 1] in ("x", "X"):
                i, digits = i + 1, _HEX
        i = _run(text, i, digits)
        if text[i:i + 1] == ".":
            i = _run(text, i + 1, digits)
        if text[i:i + 1] in ("e", "E"):
            i += 1
            if text[i:i + 1] in ("+", "-"):
                i += 1
            i = _run(text, i, _DEC)
        return i, not (i < len(text) and text[i] in _ALNUM)

    def duration_end(self, i):
        """The end of a duration whose digits end at i, or None."""
        text = self.text
        if not (i < len(text) and text[i] in "smhdwy"):
            return None
        i += 1 + (text[i + 1:i + 2] == "s")
        while i < len(text) and text[i] in _DEC:
            i = _run(text, i, _DEC)
            if not (i < len(text) and text[i] in "smhdw"):
                return None
            i += 1 + (text[i + 1:i + 2] == "s")
        return None if i < len(text) and text[i] in _ALNUM else i

    def number_or_duration(self, start):
        end, ok = self.scan_number(start)
        if ok:
            self.emit("NUMBER", start, end)
            return
        dur_end = self.duration_end(end)
        if dur_end is None:
            self.fail(start, f"bad number or duration syntax: {self.text[start:end + 1]!r}")
        self.emit("DURATION", start, dur_end)

    def duration_after_bracket(self):
        start = _run(self.text, self.pos, _SPACE)
        end, ok = self.scan_number(start)
        if ok:
            self.fail(start, "missing unit character in duration")
        dur_end = self.duration_end(end)
        if dur_end is None:
            self.fail(start, f"bad duration syntax: {self.text[start:end + 1]!r}")
        self.emit("DURATION", start, dur_end)

    # Strings (lex.go's lexString, lexEscape, lexRawString; util/strutil's Unquote).

    def string(self, start):
        text, quote = self.text, self.text[start]
        if quote == "`":
            end = text.find(quote, start + 1)
            if end < 0:
                self.fail(start, "unterminated raw string")
            if "\ufffd" in text[start:end]:
                self.fail(start, "invalid UTF-8 rune")
            self.emit("STRING", start, end + 1, text[start + 1:end])
            return
        out, i, plain = bytearray(), start + 1, _PLAIN_RE[quote]
        while True:
            end = plain.match(text, i).end()
            out += text[i:end].encode("utf-8")
            i = end
            c = text[i] if i < len(text) else ""
            if c in ("", "\n"):
                self.fail(start, "unterminated quoted string")
            if c == quote:
                break
            if c == "\\":
                i = self.escape(i + 1, quote, out)
                continue
            self.fail(i, "invalid UTF-8 rune")  # U+FFFD: Go reads it as a bad byte
        self.emit("STRING", start, i + 1, out.decode("utf-8", "surrogateescape"))

    def escape(self, i, quote, out):
        """Reads the escape whose letter is at i into `out`; returns the index after it."""
        text = self.text
        c = text[i] if i < len(text) else ""
        if c == "":
            self.fail(i, "escape sequence not terminated")
        if c in _SIMPLE_ESCAPES or c == quote:
            out.append(_SIMPLE_ESCAPES.get(c, ord(c)))
            return i + 1
        if c in "01234567":
            count, base, top, first = 3, 8, 255, i
        elif c in _CODE_ESCAPES:
            (count, base, top), first = _CODE_ESCAPES[c], i + 1
        else:
            self.fail(i, f"unknown escape sequence U+{ord(c):04X} {c!r}")
        digits = text[first:first + count]
        for d in digits:
            if (int(d, 16) if d in _HEX else 16) >= base:
                self.fail(i, f"illegal character {d!r} in escape sequence")
        if len(digits) < count:
            self.fail(i, "escape sequence not terminated")
        code = int(digits, base)
        if code > top or 0xD800 <= code < 0xE000:
            self.fail(i, "escape sequence is an invalid Unicode code point")
        out += bytes((code,)) if c not in "uU" else chr(code).encode("utf-8")
        return first + count


def _run(text, i, chars):
    """The index after the run of `chars` that starts at i."""
    while i < len(text) and text[i] in chars:
        i += 1
    return i
