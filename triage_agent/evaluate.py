"""Scenario runner: `python3 -m triage_agent.evaluate`, the eval table, pass^N and --results.

    python3 -m triage_agent.evaluate [--scenario NAME ...] [--live] [--runs N] [--min-pass RATE]
                                     [--json] [--results FILE]

Each run of a scenario (grade.py has the file format) is the real path end to end:

    kube_sim subprocess on the cluster ──kubeconfig──> `python3 -m triage_agent SYMPTOM --json
        --replay FILE --audit-log FILE` (or the live model with --live) ──outcome, audit, journal──>
    grade.grade() ──> one table row, one --results JSON line

The simulator runs as its own process (`python3 -m fixtures.kube_sim`) so this package stays
standard-library only. Exit codes: 0 when pass^N >= --min-pass, 1 below it, 2 usage errors.
"""

import argparse
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from triage_agent import grade

REPLAY_TIMEOUT, LIVE_TIMEOUT, SIM_START_TIMEOUT = 120.0, 600.0, 20.0


class SimError(Exception):
    """The simulator did not start."""


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
                "tool_calls": self.tool_calls, "usage": self.usage, "cost": self.cost,
                "seconds": round(self.seconds, 3), "model": self.model, "live": live,
                "exit_code": self.exit_code, "commit": commit,
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


# --- running ----------------------------------------------------------------------------------

class Simulator:
    """`python3 -m fixtures.kube_sim` in a subprocess, with its kubeconfig and journal in `tmp`."""

    def __init__(self, cluster, tmp):
        self.kubeconfig, self.journal = str(Path(tmp, "kubeconfig")), str(Path(tmp, "journal"))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fixtures.kube_sim", str(cluster), "--kubeconfig",
             self.kubeconfig, "--journal", self.journal], cwd=grade.PROJECT_ROOT,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_ready(self):
        """Block until the simulator prints its serving line; SimError otherwise."""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if sel.select(SIM_START_TIMEOUT) and self.proc.stdout.readline().startswith(
                    "kube-sim serving"):
                return
        self.proc.kill()
        _, err = self.proc.communicate(timeout=10)
        raise SimError(f"kube_sim did not start: {err.strip()[-500:] or 'no serving line'}")

    def journal_entries(self):
        try:
            lines = Path(self.journal).read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc.stdout.close()
        self.proc.stderr.close()


def cli_argv(scenario, *, kubeconfig, audit_log, live):
    """The triage CLI command for one run."""
    argv = [sys.executable, "-m", "triage_agent", scenario["symptom"], "--namespaces",
            ",".join(scenario["namespaces"]), "--kubeconfig", kubeconfig, "--json",
            "--audit-log", audit_log]
    return argv if live else argv + ["--replay", str(grade.resolve(scenario["replay"]))]


def read_jsonl(path):
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    return [e for e in entries if isinstance(e, dict)]


def run_scenario(scenario, *, run=1, live=False):
    """Run one scenario once through the real CLI against kube_sim and grade it."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="triage-eval-") as tmp:
        sim = Simulator(grade.resolve(scenario["cluster"]), tmp)
        try:
            sim.wait_ready()
            exit_code, stdout, stderr = _run_cli(scenario, sim.kubeconfig, tmp, live)
            journal = sim.journal_entries()
        except SimError as exc:
            exit_code, stdout, stderr, journal = None, "", str(exc), []
        finally:
            sim.stop()
        audit = read_jsonl(Path(tmp, "audit.jsonl"))
    outcome = _parse_outcome(stdout)
    checks = grade.grade(grade.expectations(scenario, live=live), exit_code=exit_code,
                         outcome=outcome, namespaces=scenario["namespaces"], journal=journal,
                         audit=audit)
    outcome = outcome or {}
    return RunResult(scenario=scenario["name"], run=run, checks=checks, exit_code=exit_code,
                     tool_calls=outcome.get("tool_calls") or 0, usage=outcome.get("usage") or {},
                     cost=outcome.get("cost_usd"), seconds=time.monotonic() - started,
                     model=outcome.get("model") or "", stderr_tail=stderr.strip()[-800:])


def _run_cli(scenario, kubeconfig, tmp, live):
    argv = cli_argv(scenario, kubeconfig=kubeconfig, audit_log=str(Path(tmp, "audit.jsonl")),
                    live=live)
    try:
        proc = subprocess.run(argv, cwd=grade.PROJECT_ROOT, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True,
                              timeout=LIVE_TIMEOUT if live else REPLAY_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        return None, "", f"triage CLI timed out after {exc.timeout:.0f} s"
    return proc.returncode, proc.stdout, proc.stderr


def _parse_outcome(stdout):
    try:
        outcome = json.loads(stdout)
    except ValueError:
        return None
    return outcome if isinstance(outcome, dict) else None


# --- summary and output -----------------------------------------------------------------------

def pass_power(results):
    """(scenarios that passed every one of their runs, scenarios): the pass^N numerator/denominator."""
    by_scenario = {}
    for result in results:
        by_scenario[result.scenario] = by_scenario.get(result.scenario, True) and result.passed
    return sum(by_scenario.values()), len(by_scenario)


def format_table(results, *, runs):
    """The eval table, one row per run, then failure details."""
    header = ["scenario"] + (["run"] if runs > 1 else []) + list(grade.CHECKS) + [
        "calls", "tokens", "cost", "secs", "result"]
    rows = [header]
    for r in results:
        marks = ["ok" if c.passed and c.applies else "-" if c.passed else "FAIL"
                 for c in r.checks]
        cost = "?" if r.cost is None else f"${r.cost:.4f}"
        rows.append([r.scenario] + ([str(r.run)] if runs > 1 else []) + marks + [
            str(r.tool_calls), f"{r.tokens:,}", cost, f"{r.seconds:.1f}",
            "PASS" if r.passed else "FAIL"])
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    for r in results:
        for c in r.checks:
            if not c.passed:
                lines.append(f"{r.scenario} run {r.run}: {c.name}: {c.detail}")
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
            "cost": None if None in costs else round(sum(costs), 6),
            "seconds": round(sum(r.seconds for r in results), 2)}


def summary_line(s):
    rate = f"pass^{s['runs_per_scenario']}" if s["runs_per_scenario"] > 1 else "pass rate"
    cost = "?" if s["cost"] is None else f"${s['cost']:.4f}"
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


def append_results(path, results, *, live):
    """Append one JSON line per run to --results FILE."""
    commit = git_commit()
    with open(path, "a", encoding="utf-8") as handle:
        for result in results:
            handle.write(json.dumps(result.record(commit=commit, live=live)) + "\n")
            handle.flush()


# --- command line -----------------------------------------------------------------------------

def _rate(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("must be between 0 and 1")
    return value


def _runs(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def build_parser():
    p = argparse.ArgumentParser(prog="python3 -m triage_agent.evaluate",
                                description="Run the triage eval scenarios against kube_sim "
                                "and grade them deterministically.")
    p.add_argument("--scenario", action="append", metavar="NAME", help="scenario name under "
                   "fixtures/scenarios/ or a path to a scenario file (repeatable; default all)")
    p.add_argument("--live", action="store_true", help="use the live model "
                   "(needs ANTHROPIC_API_KEY) instead of each scenario's replay")
    p.add_argument("--runs", type=_runs, default=1, metavar="N", help="runs per scenario; "
                   "the pass rate becomes pass^N (scenarios that passed all N runs)")
    p.add_argument("--min-pass", type=_rate, default=1.0, metavar="RATE",
                   help="exit 1 when the pass rate is below this (default 1.0)")
    p.add_argument("--json", action="store_true", help="print one JSON object, not a table")
    p.add_argument("--results", metavar="FILE", help="append one JSON line per run to FILE")
    return p


def main(argv=None, *, stdout=None, stderr=None):
    """Run the evaluation; returns the exit code."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if args.live and not os.environ.get("ANTHROPIC_API_KEY"):
        print("evaluate: --live needs ANTHROPIC_API_KEY; without it the replays run "
              "(drop --live)", file=stderr)
        return 2
    try:
        scenarios = [grade.load_scenario(ref) for ref in args.scenario or grade.scenario_names()]
    except grade.ScenarioError as exc:
        print(f"evaluate: {exc}", file=stderr)
        return 2
    if not scenarios:
        print("evaluate: no scenarios found in fixtures/scenarios/", file=stderr)
        return 2
    results = []
    try:
        for scenario in scenarios:
            for run in range(1, args.runs + 1):
                results.append(run_scenario(scenario, run=run, live=args.live))
                if not args.json:
                    print(f"evaluate: {scenario['name']} run {run}: "
                          f"{'PASS' if results[-1].passed else 'FAIL'}", file=stderr)
    except KeyboardInterrupt:
        print("evaluate: interrupted; reporting the runs finished so far", file=stderr)
    return finish(args, results, stdout, stderr)


def finish(args, results, stdout, stderr):
    """Print the table or JSON, append --results, and pick the exit code."""
    totals = summary(results, runs=args.runs)
    if args.json:
        print(json.dumps({"summary": totals, "min_pass": args.min_pass,
                          "results": [r.record(commit=None, live=args.live) for r in results]},
                         indent=1), file=stdout)
    else:
        print(format_table(results, runs=args.runs), file=stdout)
        print(summary_line(totals), file=stdout)
    if args.results:
        try:
            append_results(args.results, results, live=args.live)
        except OSError as exc:
            print(f"evaluate: cannot write --results {args.results}: {exc}", file=stderr)
            return 2
    return 0 if results and totals["pass_rate"] >= args.min_pass else 1


if __name__ == "__main__":
    sys.exit(main())
