"""A verification for people: the line the terminal report opens with, the confidence shown,
and the sections after the hypothesis (unsupported claims, the review, blind spots).

    Checked: 7 of 8 claims found in the evidence; review: partly supported (2 claims unsupported)

`checked(verification, report_confidence)` -> Checked, which report.render_text lays out;
serve's run page reads the same `check_line`.
"""

from dataclasses import dataclass, field

from triage_agent.verify.outcome import flagged_words, review_counts


@dataclass
class Checked:
    """What render_text shows of a verification."""
    line: str
    confidence: str
    sections: list = field(default_factory=list)   # [(title, [line])]


def check_line(verification) -> str:
    """'Checked: N of M claims found in the evidence; review: ...'."""
    claims = verification.get("claims") or {}
    checked = claims.get("checked") or 0
    found = checked - len(claims.get("unsupported") or ())
    return f"Checked: {found} of {checked} claims found in the evidence; review: " \
        + review_words(verification)


def review_words(verification) -> str:
    """'partly supported (2 claims unsupported)', or 'not made (why)'."""
    answer = verification.get("review")
    if not verification.get("reviewed") or not isinstance(answer, dict):
        return f"not made ({verification.get('not_reviewed_because') or 'no reason given'})"
    words = str(answer.get("verdict", "")).replace("_", " ")
    flagged = flagged_words(review_counts(answer))
    words += f" ({flagged})" if flagged else ""
    if answer.get("actions_follow") is False:
        words += "; the proposed actions do not follow from the evidence"
    return words


def confidence_words(verification, report_confidence) -> str:
    """'medium, lowered from high: ...', or the confidence as it is."""
    shown = verification.get("confidence") or report_confidence or "unknown"
    note = verification.get("confidence_note")
    return f"{shown}, {note}" if note else str(shown)


def checked(verification, report_confidence=None):
    """The Checked of an outcome's verification (None when there is none)."""
    if not isinstance(verification, dict):
        return None
    sections = []
    claims = (verification.get("claims") or {}).get("unsupported") or ()
    if claims:
        sections.append(("Claims not found in any tool result (checked by code)",
                         [f"{c.get('token')} ({c.get('where')}): \"{c.get('sentence')}\""
                          for c in claims if isinstance(c, dict)]))
    answer = verification.get("review") if verification.get("reviewed") else None
    flagged = [c for c in (answer or {}).get("claims") or ()
               if isinstance(c, dict) and c.get("status") != "supported"]
    if flagged:
        sections.append(("Claims the review flagged", [
            f"[{c.get('status')}] {c.get('claim')}" + (f" -- {c['note']}" if c.get("note") else "")
            + (f" (quote: \"{c['quote']}\")" if c.get("quote") else "") for c in flagged]))
    if answer and answer.get("alternatives"):
        sections.append(("Explanations the evidence does not rule out (review)",
                         list(answer["alternatives"])))
    if verification.get("blind_spots"):
        sections.append(("Blind spots (what this run could not see)",
                         list(verification["blind_spots"])))
    return Checked(check_line(verification), confidence_words(verification, report_confidence),
                   sections)
