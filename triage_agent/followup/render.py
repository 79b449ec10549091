"""A follow-up's answer as plain text for a terminal: the answer, its evidence, any grounding
warnings, and the revised report when the follow-up changed it."""

from triage_agent import report
from triage_agent.report import _wrap


def answer_text(outcome, *, context=None, kubeconfig=None) -> str:
    """The answer of `outcome` (a follow-up that ended with one) as text."""
    answer = outcome.answer or {}
    out = [f"ANSWER (follow-up {outcome.followup})", *_wrap(answer.get("answer") or "", "  ")]
    out += ["", "Evidence"]
    for index, item in enumerate(answer.get("evidence") or ()):
        out.append(f"  {index + 1}. from {report._clean(item.get('tool_use_id'))}")
        out += ["     | " + line for line in report.printable(item.get("quote") or "")
                .splitlines()]
        out += _wrap(item.get("interpretation") or "", "     -> ", "        ")
    if not answer.get("evidence"):
        out.append("  none")
    if outcome.grounding_warnings:
        out += ["", "Grounding warnings (not matched to any tool output; verify by hand)"]
        for warning in outcome.grounding_warnings:
            out += _wrap(warning, "  ! ", "    ")
    text = "\n".join(out) + "\n"
    if answer.get("report_changed"):
        text += ("\nTHE REPORT WAS REVISED (the previous one is kept in the session's history)"
                 "\n\n" + report.render_text(answer.get("report"), context=context,
                                             kubeconfig=kubeconfig,
                                             actions=report.actions_taken(outcome.proposals)))
    return text
