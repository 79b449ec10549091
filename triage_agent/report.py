"""The write_report tool: its schema, validation, grounding against tool output, and text.

outputs/report.schema.json is the single source of truth for the report; it is read on first
use of `REPORT_SCHEMA` / `WRITE_REPORT_TOOL` (nothing happens at import). A report is accepted
in two steps:

    validate_report(report)          schema errors, field by field
    check_grounding(report, results) every evidence quote appears verbatim (whitespace aside) in
                                     the result of the call it names; every resource name the
                                     report uses appears in some tool result

`render_text` turns a report into plain text for a terminal, with the exact kubectl command of
each proposed action and any grounding warnings last; given the run's `actions_taken` (what the
operator's approvals came to: executed, failed, approved but not run, denied) it says that
first, and a proposed action that already ran says so instead of offering its command again.
"""

import functools
import json
import os
import re
import shlex
import sys
import textwrap

from triage_agent.actions import KINDS, build_argv
from triage_agent.schema import validate
from triage_agent.terminal import printable

# In a checkout the schema sits in outputs/; `pip install .` puts that same file under
# {prefix}/share/triage-agent/ (pyproject's data-files), since it lives outside the package.
SCHEMA_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "outputs",
                           "report.schema.json")
INSTALLED_SCHEMA_PATH = os.path.join(sys.prefix, "share", "triage-agent", "report.schema.json")
WIDTH = 100

WRITE_REPORT_DESCRIPTION = (
    "Submit the final triage report. Call it exactly once, at the end of the investigation, "
    "after the tools have shown you what you report. Every evidence item quotes tool output "
    "verbatim (copy the text; do not paraphrase, fix or shorten words inside the quote) and "
    "names the tool_use_id of the call whose result contains that text. Use resource names "
    "exactly as the tools printed them (a group OWNER-{a,b} names OWNER-a and OWNER-b); never "
    "guess a pod or ReplicaSet name. proposed_actions "
    "are suggestions for a human and run nothing. If nothing is wrong, say so with severity "
    "none.")

# pod-template-hash and generated suffixes use Kubernetes' vowel-free "safe" alphabet
_SAFE = "[bcdfghjklmnpqrstvwxz2456789]"
GENERATED_NAME = re.compile(
    rf"(?<![A-Za-z0-9_.-])[a-z0-9](?:[a-z0-9-]*[a-z0-9])?-{_SAFE}{{8,10}}(?:-{_SAFE}{{5}})?"
    r"(?![A-Za-z0-9_-])")


class ReportSchemaError(Exception):
    """The report schema file is missing or unreadable."""


@functools.lru_cache(maxsize=None)
def load_report_schema(path=None) -> dict:
    """The report JSON Schema (cached; treat it as read-only)."""
    if path is None:
        path = SCHEMA_PATH if os.path.exists(SCHEMA_PATH) else INSTALLED_SCHEMA_PATH
    try:
        with open(path, encoding="utf-8") as f:
            schema = json.load(f)
    except FileNotFoundError:
        raise ReportSchemaError(f"report schema not found at {path}: it ships in the "
                                "project's outputs/ directory next to triage_agent/") from None
    except (OSError, ValueError) as exc:
        raise ReportSchemaError(f"report schema at {path} is unreadable: {exc}") from None
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ReportSchemaError(f"report schema at {path} is not an object schema")
    return schema


def write_report_tool() -> dict:
    """The write_report tool definition with the full schema (send strict_tool_schema of it)."""
    return {"name": "write_report", "description": WRITE_REPORT_DESCRIPTION,
            "input_schema": load_report_schema()}


def __getattr__(name):
    # REPORT_SCHEMA and WRITE_REPORT_TOOL read the schema file on first use, not at import
    if name == "REPORT_SCHEMA":
        return load_report_schema()
    if name == "WRITE_REPORT_TOOL":
        return write_report_tool()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def validate_report(report) -> list:
    """Field-level schema errors of a report (empty when valid)."""
    return validate(report, load_report_schema())


# --- the tool a run ends with --------------------------------------------------------------

ENDING_KINDS = ("report", "answer")   # toolset kinds of the tools that end a run


class ReportEnding:
    """How a triage ends: write_report, valid and grounded (the loop pushes back once). A
    follow-up ends through followup/answer.AnswerEnding instead, with the same methods."""
    kind, tool, stop, needs_tools = "report", "write_report", "report", True
    wrong_tool = "not accepted: this run ends with write_report."

    def __init__(self):
        from triage_agent import prompts
        self.nudge, self.last_call = prompts.NUDGE_REPORT, prompts.LAST_CALL
        self.not_run_last = prompts.NOT_RUN_LAST

    def problems(self, arguments) -> list:
        return (validate_report(arguments) if isinstance(arguments, dict)
                else ["report: expected a JSON object"])

    def check(self, arguments, results) -> list:
        return check_grounding(arguments, results)

    def done(self, outcome) -> bool:
        return outcome.report is not None

    def accept(self, outcome, arguments, warnings):
        outcome.report, outcome.grounding_warnings = arguments, warnings


def judge(ending, kind, arguments, outcome, results, *, tool_calls, pushed, last):
    """What becomes of a call of an ending tool (`kind`: the toolset entry's): (decision, text,
    push). An accepted one gives ("<kind>_accepted", its grounding warnings, None); else the
    text goes back to the model, and `push` names the one-time push-back it used ("zero": no
    tool called yet, "grounding": quotes or names not found), which `pushed` then holds."""
    from triage_agent import prompts
    if kind != ending.kind:
        return f"{kind}_refused", ending.wrong_tool, None
    problems = ending.problems(arguments)
    if problems:
        return (f"{ending.kind}_invalid", f"{ending.kind} not accepted: {'; '.join(problems)}. "
                f"Fix these and call {ending.tool} again.", None)
    if ending.done(outcome):
        return (f"{ending.kind}_duplicate",
                f"a {ending.kind} was already accepted; this one is ignored.", None)
    if ending.needs_tools and tool_calls == 0 and not ("zero" in pushed or last):
        return "report_pushed_back", prompts.NO_TOOLS_YET, "zero"
    ungrounded = ending.check(arguments, results)
    if ungrounded and not ("grounding" in pushed or last):
        return (f"{ending.kind}_ungrounded", prompts.ungrounded(ungrounded, tool=ending.tool),
                "grounding")
    return f"{ending.kind}_accepted", list(ungrounded), None


# --- grounding --------------------------------------------------------------------------------

def check_grounding(report, results) -> list:
    """Warnings for report items not backed by `results` (tool_use_id -> text of executed calls)."""
    if not isinstance(report, dict):
        return ["(root): report must be an object"]
    texts = {str(key): value if isinstance(value, str) else str(value)
             for key, value in (results or {}).items()}
    corpus = "\n".join(texts.values())
    warnings = []
    for index, item in _items(report, "evidence"):
        warnings += _check_evidence(f"evidence[{index}]", item, texts)
    for index, item in _items(report, "affected"):
        name = item.get("name")
        if isinstance(name, str) and not name_appears(name, corpus):
            warnings.append(f"affected[{index}]: name {name!r} does not appear in any tool result")
    for index, item in _items(report, "proposed_actions"):
        target = item.get("target")
        if isinstance(target, str) and not name_appears(target, corpus):
            warnings.append(f"proposed_actions[{index}].target: {target!r} does not appear in "
                            "any tool result")
    for where, text in _free_text(report):
        if not isinstance(text, str):
            continue
        missing = [name for name in dict.fromkeys(GENERATED_NAME.findall(text))
                   if not name_appears(name, corpus)]
        warnings += [f"{where}: name {name!r} does not appear in any tool result"
                     for name in missing]
    return warnings


def _items(report, key):
    value = report.get(key)
    for index, item in enumerate(value if isinstance(value, list) else []):
        if isinstance(item, dict):
            yield index, item


def _free_text(report):
    for key in ("summary", "hypothesis"):
        yield key, report.get(key)
    for index, item in _items(report, "evidence"):
        yield f"evidence[{index}].interpretation", item.get("interpretation")
    for index, item in _items(report, "proposed_actions"):
        yield f"proposed_actions[{index}].reason", item.get("reason")
    checks = report.get("next_checks")
    for index, text in enumerate(checks if isinstance(checks, list) else []):
        yield f"next_checks[{index}]", text


def _check_evidence(where, item, texts) -> list:
    call_id, quote = item.get("tool_use_id"), item.get("quote")
    if not isinstance(call_id, str) or call_id not in texts:
        return [f"{where}: tool_use_id {call_id!r} is not a tool call that ran in this run"]
    if not isinstance(quote, str) or not _normalise(quote):
        return [f"{where}: quote is empty"]
    if not quote_in(quote, texts[call_id]):
        return [f"{where}: quote not found in the result of {call_id}"]
    return []


def _normalise(text) -> str:
    return " ".join(text.split())


def quote_in(quote, text) -> bool:
    """True when `quote` is in `text` with runs of whitespace collapsed, or is a run of lines
    of it, each quoted line being a verbatim part of the corresponding line."""
    needle = _normalise(quote)
    if needle and needle in _normalise(text):
        return True
    wanted = [line for line in map(_normalise, quote.splitlines()) if line]
    if len(wanted) < 2:
        return False
    lines = [line for line in map(_normalise, text.splitlines()) if line]
    for start in range(len(lines) - len(wanted) + 1):
        if all(part in lines[start + offset] for offset, part in enumerate(wanted)):
            return True
    return False


def name_appears(name, corpus) -> bool:
    """`name` occurs in `corpus` as a whole name (a longer name it is the prefix of counts), or
    in a group as a shell expands it: `web-5f6b7c8d9b-{ngmcc,q2w3e}` names web-5f6b7c8d9b-ngmcc."""
    if not name:
        return False
    pattern = rf"(?<![A-Za-z0-9_.-]){re.escape(name)}(?![A-Za-z0-9_])"
    if re.search(pattern, corpus):
        return True
    head, _, last = name.rpartition("-")
    groups = re.finditer(rf"(?<![A-Za-z0-9_.-]){re.escape(head)}-\{{([^{{}}\s]*)\}}", corpus) if head else ()
    return any(last in group.group(1).split(",") for group in groups)


# --- text -------------------------------------------------------------------------------------

def render_text(report, *, grounding_warnings=(), context=None, kubectl="kubectl",
                kubeconfig=None, actions=None, checked=None) -> str:
    """The report as plain text for a terminal: severity and summary first, warnings last.
    `checked` (verify/show.py's Checked) adds what the loop checked: its line first, the
    confidence after checking, and its sections after the hypothesis."""
    if not isinstance(report, dict):
        report = {}
    severity = _clean(report.get("severity") or "unknown").upper()
    out = [printable(checked.line, keep_newlines=False)] if checked else []
    out += [f"SEVERITY: {severity}", *_wrap(report.get("summary") or "(no summary)", "")]
    out += ["", "Affected"]
    out += [f"  {_clean(i.get('kind')):<11} {_where(i.get('namespace'), i.get('name'))}"
            for _, i in _items(report, "affected")] or ["  none listed"]
    out += ["", "Evidence"]
    for index, item in _items(report, "evidence"):
        out.append(f"  {index + 1}. from {_clean(item.get('tool_use_id'))}")
        out += ["     | " + line for line in printable(item.get("quote") or "").splitlines()]
        out += _wrap(item.get("interpretation") or "", "     -> ", "        ")
    if not _items_present(report, "evidence"):
        out.append("  none")
    confidence = _clean(checked.confidence if checked else report.get("confidence") or "unknown")
    out += ["", f"Hypothesis (confidence: {confidence})"]
    out += _wrap(report.get("hypothesis") or "(none)", "  ")
    for title, lines in checked.sections if checked else ():
        out += ["", title]
        for line in lines:
            out += _wrap(line, "  ! ", "    ")
    if actions is not None:
        out += ["", "Actions taken (in this run, on the operator's approval)",
                *render_actions_taken(actions)]
    out += ["", "Proposed actions (for a human to review; listing one runs nothing)"]
    done = _done(actions or {})
    for index, item in _items(report, "proposed_actions"):
        out += _render_action(index, item, context=context, kubectl=kubectl,
                              kubeconfig=kubeconfig, done=done)
    if not _items_present(report, "proposed_actions"):
        out.append("  none")
    checks = report.get("next_checks") if isinstance(report.get("next_checks"), list) else []
    out += ["", "Next checks"]
    for text in checks:
        out += _wrap(text, "  - ", "    ")
    if not checks:
        out.append("  none")
    if grounding_warnings:
        out += ["", "Grounding warnings (not matched to any tool output; verify by hand)"]
        for warning in grounding_warnings:
            out += _wrap(warning, "  ! ", "    ")
    return "\n".join(out) + "\n"


def _render_action(index, item, *, context, kubectl, kubeconfig, done) -> list:
    kind, namespace, target = (_clean(item.get(k)) for k in ("kind", "namespace", "target"))
    if kind in KINDS:
        command = shlex.join(build_argv(kind, namespace, target, context=context,
                                        kubectl=kubectl, kubeconfig=kubeconfig))
    else:
        command = "(unknown kind: no command)"
    status = done.get((kind, namespace, target))
    last = f"     {status} (see Actions taken)" if status else \
        f"     run: {printable(command, keep_newlines=False)}"
    return [f"  {index + 1}. {kind} {_where(namespace, target)}",
            *_wrap(item.get("reason") or "", "     why: ", "          "), last]


# --- what the operator's approvals came to ----------------------------------------------------

TAKEN = {"executed": "executed", "failed": "failed",
         "approved_not_executed": "approved_not_run", "denied": "denied"}
DONE = {"executed": "already executed in this run", "failed": "tried in this run and failed",
        "denied": "denied by the operator in this run"}


def actions_taken(proposals) -> dict:
    """A run's proposals sorted by what happened: {executed, failed, approved_not_run, denied},
    each a list of {kind, namespace, target, command} (+ exit_code when run, verification when
    an executed one was watched, note when denied)."""
    out = {key: [] for key in TAKEN.values()}
    for proposal in proposals or ():
        key = TAKEN.get(proposal.get("decision")) if isinstance(proposal, dict) else None
        if key is None:
            continue
        item = {name: proposal.get(name) for name in ("kind", "namespace", "target")}
        item["command"] = shlex.join(str(word) for word in proposal.get("argv") or ())
        if key in ("executed", "failed"):
            item["exit_code"] = proposal.get("exit_code")
        if key == "executed" and isinstance(proposal.get("verification"), dict):
            item["verification"] = proposal["verification"]
        if key == "denied":
            item["note"] = proposal.get("note") or ""
        out[key].append(item)
    return out


def render_actions_taken(taken) -> list:
    """The Actions taken lines; each command on a line of its own, ready to paste."""
    lines = []
    for key, title in (("executed", "executed"), ("failed", "failed"),
                       ("approved_not_run", "approved, not run (--execute was off); to run it "
                                            "yourself:"),
                       ("denied", "denied by the operator")):
        for item in taken.get(key) or ():
            what = f"{_clean(item.get('kind'))} {_where(item.get('namespace'), item.get('target'))}"
            if key in ("executed", "failed"):
                code = item.get("exit_code")
                lines += [f"  - {title}: {what}"
                          + (f" (exit code {code})" if code is not None else " (did not start)"),
                          f"    {_clean(item.get('command'))}"]
                lines += _verification_lines(item.get("verification"))
            elif key == "denied":
                note = _clean(item.get("note") or "no reason given")
                lines.append(f"  - {title}: {what} ({note})")
            else:
                lines += [f"  - {title}", f"    {_clean(item.get('command'))}"]
    return lines or ["  none: nothing was run against the cluster"]


def _verification_lines(found) -> list:
    """An executed action's watch, under it: the state, how long, what was seen."""
    if not isinstance(found, dict):
        return []
    state, waited = _clean(str(found.get("state"))), _clean(str(found.get("waited_s")))
    lines = [f"    verification: {state} after {waited} s"]
    return lines + [f"      {_clean(line)}" for line in found.get("observed") or ()]


def _done(taken) -> dict:
    return {(_clean(i.get("kind")), _clean(i.get("namespace")), _clean(i.get("target"))):
            DONE[key] for key in DONE for i in taken.get(key) or ()}


def _items_present(report, key) -> bool:
    return any(True for _ in _items(report, key))


def _clean(value) -> str:
    return printable("" if value is None else value, keep_newlines=False)


def _where(namespace, name) -> str:
    namespace, name = _clean(namespace), _clean(name)
    return f"{namespace}/{name}" if namespace else name


def _wrap(text, first, rest=None) -> list:
    """`text` wrapped to WIDTH, first line prefixed by `first`, the others by `rest`."""
    rest = first if rest is None else rest
    lines = []
    for paragraph in printable(text if isinstance(text, str) else str(text)).splitlines():
        prefix = rest if lines else first
        lines += textwrap.wrap(paragraph, WIDTH, initial_indent=prefix, subsequent_indent=rest,
                               break_on_hyphens=False, break_long_words=False) or [prefix]
    return [line.rstrip() for line in lines]
