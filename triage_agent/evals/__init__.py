"""Evaluation: every scenario replayed (or live) through the real CLI, graded without a model.

    runner.py      `python3 -m triage_agent.evals`
    grade.py       the checks of one outcome against its scenario file
    scorecard.py   results over runs and scenarios, as a table and as JSON
Imports: runner -> grade, scorecard.
"""
