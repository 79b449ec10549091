"""The `answer` tool a follow-up ends with: its schema, the one place an answer is checked, and
the texts of the follow-up's turns.

    answer {"answer": str,
            "evidence": [report evidence items: tool_use_id, quote, interpretation],
            "report_changed": bool,
            "report": a full revised report (only when report_changed)}

`check_answer` is where an answer is held against what the tools returned: every evidence quote
must be in the result of the call it names (the run's or the follow-up's), names in the answer
must appear in some result, and a revised report is grounded like any report. A claim check
added later plugs in there and nowhere else. `AnswerEnding` is what the loop calls (the same
methods as report.ReportEnding): the loop pushes an ungrounded answer back once, as it does a
report.
"""

import functools

from triage_agent import report, schema

ANSWER_DESCRIPTION = (
    "Answer the operator's follow-up question and end this follow-up. answer: a few sentences "
    "for the operator. evidence: quotes copied verbatim from tool results (of this follow-up's "
    "calls or the earlier ones), each with the tool_use_id of its call. report_changed: true "
    "only when what you found changes the report; then report is the full revised report.")
MAX_ANSWER_CHARS = 4000


@functools.lru_cache(maxsize=None)
def answer_schema() -> dict:
    """The answer tool's input schema, built from the report schema (read on first use)."""
    report_schema = report.load_report_schema()
    return {"type": "object", "additionalProperties": False,
            "required": ["answer", "evidence", "report_changed"],
            "properties": {
                "answer": {"type": "string", "minLength": 1, "maxLength": MAX_ANSWER_CHARS,
                           "description": "The answer to the question, for the operator."},
                "evidence": report_schema["properties"]["evidence"],
                "report_changed": {"type": "boolean", "description": "true only when the "
                                   "report must change; then give report."},
                "report": dict(report_schema, description="The full revised report (only "
                               "with report_changed true).")}}


def add_answer_tool(toolset):
    """The run's toolset with the strict `answer` tool added (write_report stays listed: the
    stored conversation calls it, and the API wants every tool it names defined)."""
    toolset.by_api_name["answer"] = {"name": "answer", "kind": "answer",
                                     "schema": answer_schema()}
    toolset.api_tools.append({"name": "answer", "description": ANSWER_DESCRIPTION,
                              "input_schema": schema.strict_tool_schema(answer_schema()),
                              "strict": True})
    return toolset


def answer_problems(arguments) -> list:
    """Schema errors of an answer, and report_changed without a report or the other way."""
    if not isinstance(arguments, dict):
        return ["answer: expected a JSON object"]
    problems = schema.validate(arguments, answer_schema())
    if problems:
        return problems
    if arguments["report_changed"] and "report" not in arguments:
        return ["report: required when report_changed is true (the full revised report)"]
    if not arguments["report_changed"] and "report" in arguments:
        return ["report: give it only with report_changed true"]
    return []


def check_answer(arguments, results) -> list:
    """Grounding warnings of a valid answer against `results` (tool_use_id -> text of every
    call the run and its follow-ups executed). The one place an answer is checked."""
    warnings = [w.replace("summary:", "answer:", 1) for w in report.check_grounding(
        {"summary": arguments["answer"], "evidence": arguments["evidence"]}, results)]
    if arguments.get("report_changed"):
        warnings += ["report." + w for w in report.check_grounding(arguments["report"],
                                                                    results)]
    return warnings


class AnswerEnding:
    """The loop's ending for a follow-up: `answer` instead of write_report."""
    kind, tool, stop, needs_tools = "answer", "answer", "answer", False
    nudge = ("You ended your turn without calling answer. Call answer now with what you have "
             "found; the follow-up ends without an answer otherwise.")
    last_call = ("This is your last model call in this follow-up: no tool will run after it. "
                 "Call answer now, citing the tool results you already have.")
    not_run_last = "not run: that was the last model call. Only answer is accepted now."
    wrong_tool = ("not accepted: a follow-up ends with answer, not write_report. To change the "
                  "report, call answer with report_changed true and the full revised report.")

    def problems(self, arguments) -> list:
        return answer_problems(arguments)

    def check(self, arguments, results) -> list:
        return check_answer(arguments, results)

    def done(self, outcome) -> bool:
        return outcome.answer is not None

    def accept(self, outcome, arguments, warnings):
        outcome.answer, outcome.grounding_warnings = arguments, warnings
        if arguments.get("report_changed"):
            outcome.report = arguments["report"]


QUESTION_TURN = """\
Follow-up question from the operator (follow-up {number}):
{question}

The same namespaces are in scope: {namespaces}. Budgets for this follow-up: {max_steps} model \
calls (including this one) and {max_tool_calls} tool calls. The results above may be out of \
date: call a tool again for the current state. End by calling answer (not write_report): the \
answer, evidence quoting tool results verbatim with their tool_use_id, and report_changed true \
with the full revised report only when what you found changes the report."""


def question_turn(question, *, number, policy) -> str:
    """The text the question is asked in, with the scope and this follow-up's budgets."""
    return QUESTION_TURN.format(number=number, question=question.strip(),
                                namespaces=", ".join(policy.namespaces),
                                max_steps=policy.max_steps,
                                max_tool_calls=policy.max_tool_calls)
