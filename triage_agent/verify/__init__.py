"""After the report: what the loop checks of it, and the skeptical second reading.

    claims.py       the concrete tokens of a text, each looked for in the run's tool results
    blind_spots.py  what the run could not see, written by the loop from its own records
    review.py       one strict model call (review_report) in a fresh, short conversation
    outcome.py      the outcome's `verification` object: the three above, the confidence
                    after checking; check_run() is what the loop calls once a report is in
    show.py         the verification for people: the terminal's opening line and sections

Nothing here changes the model's report: the verification sits beside it. Imports run
downward: verify uses report.py, context.py, turns.py and the telemetry; the loop calls
verify.outcome.check_run.
"""
