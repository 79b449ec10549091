"""Outcome: everything a run produced, whatever ended it, and the exit code it comes to.

loop.run_triage fills one in; the CLI prints it (text, or the --json object of `to_dict`), serve
writes it as the run's outcome file, and the evaluator grades it.
"""

import dataclasses
from dataclasses import dataclass, field

from triage_agent import context, report
from triage_agent.telemetry import records

EXIT_CODES = {"report": 0, "answer": 0, "usage_error": 2, "preflight_failed": 2, "api_error": 4, "mcp_error": 4,
              "interrupted": 130}


@dataclass
class Outcome:
    """Everything a run produced, whatever ended it."""
    report: dict = None
    stop: str = ""
    steps: int = 0
    tool_calls: int = 0
    violations: list = field(default_factory=list)
    not_offered: list = field(default_factory=list)   # [{tool, reason}]: server tools left out
    proposals: list = field(default_factory=list)
    grounding_warnings: list = field(default_factory=list)
    verification: dict = None  # verify/outcome.py: claims, blind spots, review (with a report)
    usage: dict = field(default_factory=lambda: {"input": 0, "output": 0, "cache_read": 0,
                                                 "cache_write": 0})
    usage_by_step: list = field(default_factory=list)  # [{step, input, cache_write, cache_read, output}]
    context: dict = field(default_factory=dict)         # context.Keeper.stats(): cap and clearing
    cost_usd: float = 0.0
    model: str = ""
    trace: str = None
    trace_id: str = None
    audit_log: str = None
    error: str = None
    audit_error: str = None   # why the audit log stopped taking entries mid-run (no action ran)
    alert: dict = None  # with --alert: fingerprint, alertname, generatorURL of each alert
    answer: dict = None    # a follow-up's accepted answer (followup/answer.py); its revised
    followup: int = None   # report, if any, is `report`; `followup` is its number in the session

    @property
    def exit_code(self):
        """The CLI's exit code for this outcome."""
        return EXIT_CODES.get(self.stop, 3)

    def to_dict(self):
        """The outcome as a JSON-ready dict (the --json object): money rounded, what the
        operator's approvals came to in `actions_taken`, and strict JSON (no NaN) throughout.
        Its fields hold plain JSON values, and strict_json copies every dict and list of them:
        no dataclasses.asdict, whose deep copy was most of the time of a short run's outcome."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["cost_usd"] = records.money(self.cost_usd)
        out["actions_taken"] = report.actions_taken(self.proposals)
        out["context"] = self.context or context.Keeper(max_result_bytes=0, budget_tokens=0).stats(
            self.usage)   # a run that ended before its first step
        return records.strict_json(out)
