"""Follow-ups: a finished run's conversation goes on, under its scope and gates, never wider.

    session.py      the session file: conversation, policy, report, history (redacted, 0600)
    ask.py          ask_followup(): one question through the ordinary loop; the entry point
                    every front end calls (the ask command, --interactive, serve, chat)
    answer.py       the strict `answer` tool, check_answer (grounding), the question's turn
    command.py      `triage-agent ask SESSION QUESTION`, and a run's --session/--interactive
    interactive.py  the follow-up> prompt
    render.py       an answer as text
Imports: command -> ask, session, interactive, render, cli; ask -> loop, answer, session. The
loop knows only the seams ask passes it (resume, ending, transcript).
"""
