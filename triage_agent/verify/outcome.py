"""The outcome's `verification`: claim checks, blind spots and the review of one accepted report.

    {"claims": {"checked": M, "unsupported": [{kind, token, where, sentence}]},
     "blind_spots": [line],
     "review": {verdict, claims, alternatives, actions_follow} | null,
     "reviewed": bool, "not_reviewed_because": str,
     "confidence": the report's confidence after checking, "confidence_note": why it is lower}

The model's report is never changed. `confidence` is the report's, lowered one step (high ->
medium -> low, never raised) when a claim was not found in the evidence or the review found one
unsupported or contradicted; `confidence_note` says why ("" when it is the report's own).
`check_run` is what the loop calls once a report is accepted, with the run's records;
`check_answer` the same for a follow-up's answer (and the revised report it may carry), which
is claim-checked and given its blind spots but not reviewed.
"""

from triage_agent import prompts
from triage_agent.verify import blind_spots, claims, review

LOWER = {"high": "medium", "medium": "low", "low": "low"}


def check_answer(run) -> dict:
    """The verification of a follow-up's accepted answer: its text (and a revised report's)
    against every result the run and its follow-ups saw; the question counts as given."""
    answer = run.outcome.answer
    texts = [("answer", answer.get("answer"))] if isinstance(answer.get("answer"), str) else []
    if answer.get("report_changed") and isinstance(answer.get("report"), dict):
        texts += [("report." + where, text)
                  for where, text in claims.report_texts(answer["report"])]
    given = [prompts.SYSTEM_PROMPT] + [b.get("text", "") for m in run.messages
                                       if m["role"] == "user" for b in m["content"]
                                       if b.get("type") == "text"]
    offered = [e["name"] for e in run.toolset.by_api_name.values() if e["kind"] == "server"]
    try:
        checks = claims.check_claims(texts, run.ledger.results, given=given)
        spots = blind_spots.find_blind_spots(
            run.entries, results=run.ledger.results, calls=run.ledger.calls, offered=offered,
            symptom=run.symptom, namespaces=run.policy.namespaces)
    except Exception as exc:  # as in check_run: a checker's bug costs the answer nothing
        checks = {"checked": 0, "unsupported": []}
        spots = [f"the loop's checks failed ({type(exc).__name__}: {exc}): verify by hand"]
    return verification(answer.get("report") or {}, checks, spots, None,
                        "a follow-up's answer is checked by code, not reviewed")


def check_run(run, *, reviewing) -> dict:
    """The verification of `run`'s report (loop._Run: its outcome, ledger, audit entries,
    messages, toolset, policy, model seam and spend); the review's tokens and cost are added to
    the outcome's. `reviewing` False: no review ("turned off")."""
    the_report = run.outcome.report
    given = [prompts.SYSTEM_PROMPT] + [b.get("text", "") for b in run.messages[0]["content"]]
    offered = [e["name"] for e in run.toolset.by_api_name.values() if e["kind"] == "server"]
    try:
        checks = claims.check_claims(claims.report_texts(the_report), run.ledger.results,
                                     given=given)
        spots = blind_spots.find_blind_spots(
            run.entries, results=run.ledger.results, calls=run.ledger.calls, offered=offered,
            symptom=run.symptom, namespaces=run.policy.namespaces)
    except Exception as exc:  # a checker's bug must not cost the run its outcome: say so
        checks = {"checked": 0, "unsupported": []}
        spots = [f"the loop's checks failed ({type(exc).__name__}: {exc}): verify by hand"]
    answer, why = None, "turned off (--no-verify, or a replay without --verify)"
    if reviewing and run.outcome.stop != "report":   # ^C came after the report: no more calls
        why = f"the run stopped ({run.outcome.stop}) before the review"
    elif reviewing:
        answer, why = review_run(run, checks, spots)
    return verification(the_report, checks, spots, answer, why)


def review_run(run, checks, spots):
    """(answer, "") or (None, why not); audited and traced, its cost in the outcome."""
    def audit(**fields):
        run.record(step=run.outcome.steps, tool="review_report", **fields)

    reviewer = review.Reviewer(model=run.model, settings=run.settings, spend=run.spend,
                               limit=run.policy.max_cost_usd, trace=run.trace, audit=audit)
    text = review.first_message(run.outcome.report, run.ledger.results, run.ledger.calls,
                                checks, spots)
    try:
        answer = reviewer.review(text, run.ledger.results)
    except review.ReviewFailed as exc:
        audit(decision="review_failed", error=str(exc))
        answer, why = None, str(exc)
    else:
        audit(decision="reviewed", verdict=answer["verdict"],
              flagged=sum(c["status"] != "supported" for c in answer["claims"]))
        why = ""
    run.outcome.usage, run.outcome.cost_usd = run.spend.usage.as_dict(), run.spend.usage.cost
    return answer, why


def verification(the_report, checks, spots, answer, why) -> dict:
    """The verification object (see the module docstring)."""
    confidence = the_report.get("confidence") if isinstance(the_report, dict) else None
    reasons = lowering_reasons(checks, answer)
    lowered = LOWER.get(confidence, confidence) if reasons else confidence
    note = (f"lowered from {confidence}: {'; '.join(reasons)}"
            if reasons and lowered != confidence else "")
    return {"claims": checks, "blind_spots": spots, "review": answer,
            "reviewed": answer is not None, "not_reviewed_because": "" if answer else why,
            "confidence": lowered, "confidence_note": note}


def lowering_reasons(checks, answer) -> list:
    """Why the confidence is lowered (empty: it is not)."""
    reasons = []
    missing = len(checks["unsupported"])
    if missing:
        reasons.append(f"{missing} of {checks['checked']} claims not found in the evidence")
    counts = review_counts(answer)
    if counts["unsupported"] or counts["contradicted"]:
        reasons.append("review: " + flagged_words(counts))
    elif answer and answer["verdict"] != "supported":
        reasons.append(f"review: {answer['verdict'].replace('_', ' ')}")
    return reasons


def review_counts(answer) -> dict:
    """Claims of the review by status."""
    counts = {status: 0 for status in review.STATUSES}
    for claim in (answer or {}).get("claims") or ():
        status = claim.get("status") if isinstance(claim, dict) else None
        if status in counts:
            counts[status] += 1
    return counts


def flagged_words(counts) -> str:
    """'2 claims unsupported', '1 claim unsupported, 1 contradicted'."""
    words = [f"{counts[s]} {'claim' if counts[s] == 1 else 'claims'} {s}"
             for s in ("unsupported", "contradicted") if counts[s]]
    if len(words) == 2:
        words[1] = words[1].split(" ", 2)[0] + " " + words[1].split(" ", 2)[2]
    return ", ".join(words)
