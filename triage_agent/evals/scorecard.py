"""The eval scorecard: pass^N, the table of checks per run, the summary line, --results lines.

pass^N is the share of scenarios whose every one of N runs passed all checks: a scenario that
passes 2 of 3 runs counts as failed, because an operator meets the bad run too. With N = 1 it is
the plain pass rate. --results appends one JSON line per run (`RunResult.record`), so live results
can be kept beside the fixtures and compared across commits.
"""

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from triage_agent.evals import grade


@dataclass
class RunResult:
    """One graded run of one scenario."""
    scenario: str
    run: int
    checks: list
    exit_code: int = None
    tool_calls: int = 0
    usage: dict = field(default_factory=dict)
    cost: float = None
    seconds: float = 0.0
    model: str = ""
    stderr_tail: str = ""
    unsupported: list = field(default_factory=list)   # grade.unsupported_claims of the outcome

    @property
    def passed(self):
        return all(c.passed for c in self.checks)

    @property
    def tokens(self):
        return sum(v for v in self.usage.values() if isinstance(v, int))

    def record(self, *, commit, live):
        """The --results JSON line for this run."""
        return {"scenario": self.scenario, "run": self.run, "passed": self.passed,
                "checks": {c.name: c.passed if c.applies else None for c in self.checks},
                "failures": {c.name: c.detail for c in self.checks if not c.passed},
                "unsupported_claims": self.unsupported,
                "tool_calls": self.tool_calls, "usage": self.usage, "cost": self.cost,
                "seconds": round(self.seconds, 3), "model": self.model, "live": live,
                "exit_code": self.exit_code, "commit": commit,
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def pass_power(results):
    """(scenarios that passed all their runs, scenarios): pass^N as a fraction."""
    by_scenario = {}
    for result in results:
        by_scenario[result.scenario] = by_scenario.get(result.scenario, True) and result.passed
    return sum(by_scenario.values()), len(by_scenario)


def format_table(results, *, runs):
    """The eval table, one row per run, then failure details."""
    header = ["scenario"] + (["run"] if runs > 1 else []) + list(grade.CHECKS) + [
        "unsup", "calls", "tokens", "cost", "secs", "result"]
    rows = [header]
    for r in results:
        marks = ["ok" if c.passed and c.applies else "-" if c.passed else "FAIL"
                 for c in r.checks]
        cost = "?" if r.cost is None else f"${r.cost:.4f}"
        rows.append([r.scenario] + ([str(r.run)] if runs > 1 else []) + marks + [
            str(len(r.unsupported)), str(r.tool_calls), f"{r.tokens:,}", cost,
            f"{r.seconds:.1f}",
            "PASS" if r.passed else "FAIL"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    for r in results:
        for c in r.checks:
            if not c.passed and c.detail != grade.NO_OUTCOME:
                lines.append(f"{r.scenario} run {r.run}: {c.name}: {c.detail}")
        if r.unsupported and all(c.passed for c in r.checks if c.name == "claims"):
            lines.append(f"{r.scenario} run {r.run}: unsupported claims: "
                         + "; ".join(r.unsupported)[:300])
        if not r.passed and r.stderr_tail and r.exit_code not in (0, 3):
            lines.append(f"{r.scenario} run {r.run}: CLI stderr: {r.stderr_tail[-300:]}")
    return "\n".join(lines)


def summary(results, *, runs):
    """Pass rate, pass^N and totals as a dict (the --json object minus the rows)."""
    passed, scenarios = pass_power(results)
    costs = [r.cost for r in results]
    return {"runs_per_scenario": runs, "runs": len(results),
            "runs_passed": sum(r.passed for r in results),
            "scenarios": scenarios, "scenarios_passed_all_runs": passed,
            "pass_rate": passed / scenarios if scenarios else 0.0,
            "tool_calls": sum(r.tool_calls for r in results),
            "tokens": sum(r.tokens for r in results),
            "cost": round(sum(c for c in costs if c is not None), 6),
            "cost_unknown_runs": costs.count(None),
            "seconds": round(sum(r.seconds for r in results), 2)}


def summary_line(s):
    rate = f"pass^{s['runs_per_scenario']}" if s["runs_per_scenario"] > 1 else "pass rate"
    cost = f"${s['cost']:.4f}" + (f" (+{s['cost_unknown_runs']} runs unpriced)"
                                  if s["cost_unknown_runs"] else "")
    return (f"{rate}: {s['scenarios_passed_all_runs']}/{s['scenarios']} scenarios "
            f"({s['pass_rate']:.0%}); runs passed {s['runs_passed']}/{s['runs']}; "
            f"tool calls {s['tool_calls']}, tokens {s['tokens']:,}, cost {cost}, "
            f"{s['seconds']:.1f} s")


def git_commit():
    """HEAD of the checkout, or None when git or the repository is not there."""
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=grade.PROJECT_ROOT,
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = proc.stdout.strip()
    return commit if proc.returncode == 0 and commit else None


def prepare_results(path):
    """Make sure --results FILE can be appended to, creating it and its folder; OSError if not."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8"):
        pass


def append_results(path, results, *, live, commit):
    """Append one JSON line per run to --results FILE."""
    with open(path, "a", encoding="utf-8") as handle:
        for result in results:
            handle.write(json.dumps(result.record(commit=commit, live=live)) + "\n")
            handle.flush()
