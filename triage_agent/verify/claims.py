"""Claim checks: every concrete token a text states, looked for in the tool results of the run.

    check_claims(texts, results, *, given=()) -> {"checked": M, "unsupported": [...]}

`texts` are the sentences to check ([(where, text)], e.g. a report's summary, hypothesis and
proposed actions' reasons, or a follow-up answer); `results` the run's tool results
(tool_use_id -> text, already redacted: the ledger's). A token is one of:

    name       a generated pod or ReplicaSet name (report.GENERATED_NAME), or kind/name
    exit_code  exit code 137, exited with 1, exit_code=1      found only as an exit code
    size       512Mi, 1.5Gi, 256MB                            number and unit
    percent    85%, 99.5 %
    duration   30s, 5m0s, 2h, 10 minutes                      found as the same length of time
    count      47 restarts, port 8080, HTTP 503               the number, anywhere
    image      registry.example.com/shop/checkout:v2.3.0, checkout:v2, @sha256:...
    version    v2.3.0, 1.25.3                                 with or without its leading v
    env        PAYMENT_API_URL
    quoted     "...", `...`, 'quoted words'                   verbatim, whitespace aside

A token found in `given` (the operator's symptom, the first turn, the system prompt) is not a
claim of the run and is not counted. What no result holds is listed as unsupported with its
kind, the sentence it came from and where that sentence is. No model, no I/O: deterministic.
"""

import re

from triage_agent.report import GENERATED_NAME, name_appears, quote_in

_B = r"(?<![\w.-])"           # a token starts after a space or punctuation other than . - _
_E = r"(?![\w-]|\.\w)"         # and ends before one (a sentence's full stop is not part of it)
KIND_REF = re.compile(r"(?i)\b(?:deployment|deploy|pod|replicaset|rs|statefulset|sts|daemonset|"
                      r"ds|job|cronjob|service|svc|configmap|cm|pvc|node|ingress)/"
                      r"([a-z0-9](?:[a-z0-9.-]*[a-z0-9])?)")
EXIT = re.compile(r"(?i)(?<![a-z])exit(?:ed)?(?:[ _-]?code)?(?:\s+with(?:\s+(?:exit\s+)?"
                  r"(?:code|status))?)?\s*[:=]?\s*(\d{1,3})(?!\d)")
SIZE = re.compile(_B + r"(\d+(?:\.\d+)?)\s?(KiB|MiB|GiB|TiB|Ki|Mi|Gi|Ti|Pi|KB|MB|GB|TB|kB)"
                  r"(?![A-Za-z0-9])")
PERCENT = re.compile(_B + r"(\d+(?:\.\d+)?)\s?%")
DURATION = re.compile(_B + r"((?:\d+(?:\.\d+)?(?:ms|h|m|s|d))+)(?![A-Za-z0-9])")
WORD_DURATION = re.compile(r"(?i)\b(\d+(?:\.\d+)?)\s+(milliseconds?|seconds?|secs?|minutes?|"
                           r"mins?|hours?|days?)\b")
UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
WORD_UNITS = {"mi": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
COUNT_AFTER = re.compile(r"(?i)(?<![\w.])(\d+)\s+(?:restarts?|replicas?|pods?|containers?|nodes?|"
                         r"times|errors?|requests?|retries|attempts|endpoints?|events?|"
                         r"lines|calls|connections?|jobs?)\b")
COUNT_BEFORE = re.compile(r"(?i)\b(?:port|restarts|replicas|http|status|count)\s*[:=]?\s*"
                          r"(\d+)(?![\d.])")
IMAGE = re.compile(r"(?<![\w./:@-])([a-z0-9][a-z0-9._-]*(?:/[a-z0-9][a-z0-9._-]*)+"
                   r"(?::\w[\w.-]*?)?(?:@sha256:[0-9a-f]{6,64})?)" + _E)
NAME_TAG = re.compile(r"(?<![\w./:@-])([a-z][a-z0-9._-]*:v?\d[\w.-]*?)" + _E)
VERSION = re.compile(_B + r"(v\d+(?:\.\d+){1,3}(?:-[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?|"
                     r"\d+(?:\.\d+){2,3}(?:-[0-9A-Za-z]+(?:\.[0-9A-Za-z]+)*)?)" + _E)
ENV = re.compile(r"(?<![\w$])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?!\w)")
GROUP_ONE = ("name", "image", "version", "env", "quoted")   # the others keep their label
QUOTED = (re.compile(r'"([^"\n]{2,300})"'), re.compile(r"`([^`\n]{1,300})`"),
          re.compile("\u201c([^\u201d\n]{2,300})\u201d"),
          re.compile(r"(?<![\w])'([^'\n]{2,300})'(?![\w])"))


def find_claims(where, text) -> list:
    """The claims of one text: [{kind, token, where, sentence}] in the order written."""
    if not isinstance(text, str) or not text.strip():
        return []
    found = []

    def add(kind, match, group):
        token = match.group(group)
        if kind == "image" and not re.search(r":[^/]*$|@sha256:", token):
            return   # namespace/name, not an image: an image reference has a tag or digest
        found.append((match.start(group), {"kind": kind, "token": token, "where": where,
                                           "sentence": sentence_at(text, match.start(group))}))
    for match in GENERATED_NAME.finditer(text):
        add("name", match, 0)
    for kind, patterns in (("name", (KIND_REF,)), ("exit_code", (EXIT,)), ("size", (SIZE,)),
                           ("percent", (PERCENT,)), ("duration", (DURATION, WORD_DURATION)),
                           ("count", (COUNT_AFTER, COUNT_BEFORE)), ("image", (IMAGE, NAME_TAG)),
                           ("version", (VERSION,)), ("env", (ENV,)), ("quoted", QUOTED)):
        for pattern in patterns:
            for match in pattern.finditer(text):
                add(kind, match, 1 if kind in GROUP_ONE else 0)
    return [claim for _, claim in sorted(found, key=lambda pair: pair[0])]


def sentence_at(text, position) -> str:
    """The sentence of `text` around `position`, whitespace collapsed."""
    starts = [m.end() for m in re.finditer(r"[.!?](?=\s)|\n", text[:position])]
    start = starts[-1] if starts else 0
    end = re.search(r"[.!?](?=\s|$)|\n", text[position:])
    stop = position + end.end() if end else len(text)
    return " ".join(text[start:stop].split())


class Evidence:
    """The tool results as one searchable text, with what the checks look up more than once."""

    def __init__(self, texts):
        self.corpus = "\n".join(t if isinstance(t, str) else str(t) for t in texts)
        self.exit_codes = {int(m.group(1)) for m in EXIT.finditer(self.corpus)}
        self._durations = None

    @property
    def durations(self):
        if self._durations is None:
            self._durations = {seconds(m.group(0)) for m in DURATION.finditer(self.corpus)} | {
                seconds(m.group(0)) for m in WORD_DURATION.finditer(self.corpus)}
        return self._durations

    def holds(self, claim) -> bool:
        """True when the results support `claim`'s token."""
        kind, token = claim["kind"], claim["token"]
        if kind == "name":
            return name_appears(token, self.corpus)
        if kind == "exit_code":
            return int(EXIT.search(token).group(1)) in self.exit_codes
        if kind in ("size", "percent"):
            number, unit = re.match(r"([\d.]+)\s?(.*)", token).groups()
            unit = re.escape(unit[:2]) + "(?:B|iB)?" if unit.endswith("iB") or unit in (
                "Ki", "Mi", "Gi", "Ti", "Pi") else re.escape(unit)   # 512MiB is 512Mi
            return self.has(rf"{re.escape(number)}\s?{unit}(?![A-Za-z0-9])")
        if kind == "duration":
            return self.has(re.escape(token) + r"(?![A-Za-z0-9])") or seconds(
                token) in self.durations
        if kind == "count":
            number = re.search(r"\d+", token).group(0)
            return self.has(rf"(?<![\d.]){number}(?![\d])")
        if kind == "version":
            bare = token[1:] if token.startswith("v") else token
            return self.has(re.escape(bare) + _E) or self.has(re.escape("v" + bare) + _E)
        if kind in ("image", "env"):
            return self.has(re.escape(token) + r"(?![\w])")
        return quote_in(token, self.corpus)

    def has(self, pattern) -> bool:
        return re.search(_B + pattern if not pattern.startswith("(?<!") else pattern,
                         self.corpus) is not None


def seconds(text) -> float:
    """A duration as seconds: 5m0s -> 300, 10 minutes -> 600, 250ms -> 0.25."""
    word = WORD_DURATION.fullmatch(text.strip())
    if word:
        unit = word.group(2).lower()
        return float(word.group(1)) * WORD_UNITS["mi" if unit.startswith("milli") else unit[0]]
    return sum(float(n) * UNITS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s|d)", text))


def _pairs(texts):
    if isinstance(texts, str):
        return [("text", texts)]
    if isinstance(texts, dict):
        return list(texts.items())
    return [(where, text) for where, text in texts or ()]


def check_claims(texts, results, *, given=()) -> dict:
    """{"checked": how many distinct claims, "unsupported": [{kind, token, where, sentence}]}
    for `texts` ([(where, text)], {where: text} or one string) against `results`
    (tool_use_id -> text, or texts); tokens that `given` texts hold are not claims."""
    evidence = Evidence(results.values() if isinstance(results, dict) else results or ())
    supplied = Evidence(given)
    seen, checked, unsupported = set(), 0, []
    for where, text in _pairs(texts):
        for claim in find_claims(where, text):
            key = (claim["kind"], " ".join(claim["token"].split()))
            if key in seen or supplied.holds(claim):
                continue
            seen.add(key)
            checked += 1
            if not evidence.holds(claim):
                unsupported.append(claim)
    return {"checked": checked, "unsupported": unsupported}


def report_texts(report) -> list:
    """The texts of a report whose claims are checked: summary, hypothesis, each proposed
    action's reason."""
    texts = [("summary", report.get("summary")), ("hypothesis", report.get("hypothesis"))]
    actions = report.get("proposed_actions")
    for index, item in enumerate(actions if isinstance(actions, list) else []):
        if isinstance(item, dict):
            texts.append((f"proposed_actions[{index}].reason", item.get("reason")))
    return [(where, text) for where, text in texts if isinstance(text, str)]
