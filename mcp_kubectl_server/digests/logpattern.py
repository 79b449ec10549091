"""The model's search pattern: checked before use, and matched within a time bound.

A pattern is untrusted input. `check_pattern` refuses what Python's backtracking matcher can
take exponential or unbounded time on, with a sentence saying how to rewrite it:
backreferences (\\1, (?P=name)), lookarounds ((?=..), (?!..), (?<=..), (?<!..)), conditionals,
and a repeated group that holds a repeat or an alternation ((a+)+, (a|aa)*, (\\w+\\s?)*). What is
left is still polynomial on a long line (a.*b.*c.*d), so matching is also bounded in time:
`MatchClock` gives each call a budget of seconds of searching. On the main thread (the server's,
where tool calls run) a timer interrupts a single search that runs past it; elsewhere the budget
is checked after each search. Either way the caller learns that it stopped and says so.
"""

import re
import signal
import threading
import time

try:  # the parser behind re.compile: re._parser from 3.11, sre_parse before
    from re import _parser as sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse

PATTERN_MAX = 200
_C = sre_parse  # opcode names live on the parser module in every supported version
_REPEATS = {_C.MAX_REPEAT, _C.MIN_REPEAT} | ({_C.POSSESSIVE_REPEAT} if hasattr(_C, "POSSESSIVE_REPEAT") else set())
_REWRITE = {
    "backreference": "backreferences (\\1, (?P=name)) are not supported: search for the literal text",
    "lookaround": "lookarounds ((?=...), (?!...), (?<=...), (?<!...)) are not supported: match the "
                  "text itself, or search twice",
    "conditional": "conditional groups (?(1)...) are not supported",
    "nested": "a repeated group may not hold a repeat or an alternation ((a+)+, (a|aa)*, (\\w+ )*): "
              "repeat a character class instead ([a-z ]+), or list the alternatives without repeating "
              "them (error|fatal)",
}


class MatchTimeError(Exception):
    """A search ran past the call's matching budget."""


def check_pattern(field, value):
    """A message the model can act on, or None when `value` is a pattern this server runs."""
    if not isinstance(value, str) or not value:
        return f"{field}: must be a non-empty regular expression"
    if len(value) > PATTERN_MAX:
        return f"{field}: at most {PATTERN_MAX} characters, got {len(value)}"
    try:
        parsed = sre_parse.parse(value)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"{field}: not a valid regular expression ({exc}); escape literal ( [ + * ? with a backslash"
    problem = _unsafe(parsed, inside_repeat=False)
    return f"{field}: {_REWRITE[problem]}" if problem else None


def _unsafe(items, *, inside_repeat):
    """The kind of problem in a parsed (sub)pattern, or None."""
    for op, av in items:
        if op in (_C.GROUPREF,):
            return "backreference"
        if op in (_C.ASSERT, _C.ASSERT_NOT):
            return "lookaround"
        if op is _C.GROUPREF_EXISTS:
            return "conditional"
        if op in _REPEATS:
            low, high, body = av
            if inside_repeat and high > 1:
                return "nested"
            problem = _unsafe(body, inside_repeat=inside_repeat or high > 1)
            if problem:
                return problem
        elif op is _C.BRANCH:
            if inside_repeat:
                return "nested"
            for branch in av[1]:
                problem = _unsafe(branch, inside_repeat=inside_repeat)
                if problem:
                    return problem
        elif op is _C.SUBPATTERN:
            problem = _unsafe(av[-1], inside_repeat=inside_repeat)
            if problem:
                return problem
        elif op is getattr(_C, "ATOMIC_GROUP", None):
            problem = _unsafe(av, inside_repeat=inside_repeat)
            if problem:
                return problem
    return None


def literal_alternatives(value):
    """The literal strings a pattern is an alternation of (`timeout|connection refused`), or None
    when it is anything more: such a pattern matches a text exactly when one string is in it."""
    try:
        items = list(sre_parse.parse(value))
    except (re.error, RecursionError, OverflowError):
        return None
    if len(items) == 1 and items[0][0] is _C.SUBPATTERN:
        items = list(items[0][1][-1])
    branches = [items] if not (len(items) == 1 and items[0][0] is _C.BRANCH) else [list(b) for b in items[0][1][1]]
    words = []
    for branch in branches:
        if not branch or any(op is not _C.LITERAL for op, _ in branch):
            return None
        words.append("".join(chr(code) for _, code in branch))
    return tuple(words)


def compile_pattern(value, *, ignore_case):
    """The compiled pattern (check_pattern passed)."""
    return re.compile(value, re.IGNORECASE if ignore_case else 0)


class MatchClock:
    """A call's matching budget: the seconds spent searching (`search`) or scanning (`charge`),
    not those spent waiting for the cluster, which the reader's own timeout bounds. Use it as a
    context manager around the scan; `search` raises MatchTimeError when one search runs past
    what is left (on the main thread a timer interrupts it); `expired()` says when it is spent."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.spent = 0.0
        self._matching = False
        self._timer = False
        self._previous = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
            try:
                self._previous = signal.signal(signal.SIGALRM, self._alarm)
                self._timer = True
            except (ValueError, OSError):
                self._timer = False
        return self

    def __exit__(self, *exc):
        self._matching = False
        if self._timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous or signal.SIG_DFL)
        return False

    def _alarm(self, signum, frame):
        if self._matching:
            raise MatchTimeError()

    def search(self, regex, text):
        """regex.search(text), charged to the budget."""
        started = time.perf_counter()
        if self._timer:
            signal.setitimer(signal.ITIMER_REAL, max(self.seconds - self.spent, 0.001))
        self._matching = True
        try:
            return regex.search(text)
        finally:
            self._matching = False
            if self._timer:
                signal.setitimer(signal.ITIMER_REAL, 0)
            self.charge(time.perf_counter() - started)

    def charge(self, seconds):
        """Count `seconds` of scanning done outside `search` (raises MatchTimeError past the budget)."""
        self.spent += seconds
        if self.spent >= self.seconds:
            raise MatchTimeError()

    def expired(self):
        return self.spent >= self.seconds
