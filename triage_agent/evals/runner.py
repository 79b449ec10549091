"""Scenario runner and command line: `python3 -m triage_agent.evals`.

    python3 -m triage_agent.evals [--scenario NAME ...] [--runs N] [--min-pass RATE] [--json]
                                  [--results FILE]
                                  [--live [--model NAME] [--provider bedrock|vertex ...]]

Each run of a scenario (grade.py has the file format) is the real path end to end:

    kube_sim subprocess on the cluster file
      └─kubeconfig─> python3 -m triage_agent SYMPTOM --json --audit-log FILE --replay FILE
                     (no --replay with --live: the real model, or a self-hosted one
                      that ANTHROPIC_BASE_URL names; --model NAME and the endpoint flags
                      --provider, --region, --project, ... are passed on, and checked once
                      before the first run as the CLI checks them)
        └─outcome, audit log, simulator journal─>
    grade.grade() ──> one RunResult: a table row and a --results line (scorecard.py)

The simulator runs as its own process (`python3 -m fixtures.kube_sim`) so this package stays
standard-library only. Exit codes: 0 when pass^N >= --min-pass, 1 below it, 2 usage errors,
128 + N when signal N stopped it, as the triage CLI does (130 ^C, 143 SIGTERM, 129 SIGHUP): the
runs finished so far are still printed and appended, and the simulator, CLI and MCP server of
the run in progress are stopped.
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
from pathlib import Path

from triage_agent import terminal
from triage_agent.evals import grade, scorecard
from triage_agent.evals.endpoint import endpoint_argv, live_endpoint_problem
from triage_agent.model import replay
from triage_agent.evals.scorecard import RunResult

REPLAY_TIMEOUT, LIVE_TIMEOUT, SIM_START_TIMEOUT = 120.0, 600.0, 20.0


class SimError(Exception):
    """The simulator did not start."""


# --- running ----------------------------------------------------------------------------------

class Simulator:
    """`python3 -m fixtures.kube_sim` in a subprocess, with its kubeconfig and journal in `tmp`."""

    def __init__(self, cluster, tmp):
        self.kubeconfig, self.journal = str(Path(tmp, "kubeconfig")), str(Path(tmp, "journal"))
        self.prometheus_url = None
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "fixtures.kube_sim", str(cluster), "--kubeconfig",
             self.kubeconfig, "--journal", self.journal], cwd=grade.PROJECT_ROOT,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_ready(self):
        """Block until the simulator prints its serving line; SimError otherwise. A cluster with
        a metrics section has a Prometheus beside it, whose URL the line names (prometheus=URL)."""
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            line = self.proc.stdout.readline() if sel.select(SIM_START_TIMEOUT) else ""
            if line.startswith("kube-sim serving"):
                self.prometheus_url = next((word.split("=", 1)[1] for word in line.split()
                                            if word.startswith("prometheus=")), None)
                return
        self.proc.kill()
        _, err = self.proc.communicate(timeout=10)
        raise SimError(f"kube_sim did not start: {err.strip()[-500:] or 'no serving line'}")

    def journal_entries(self):
        """The write requests the cluster received (JSONL journal)."""
        return read_jsonl(self.journal)

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


def cli_argv(scenario, *, kubeconfig, audit_log, live, prometheus_url=None, model=None, endpoint=()):
    """The triage CLI command for one run (with the simulator's Prometheus when it has one, and
    for a live run the model it asks for when one is named and its `endpoint` flags:
    endpoint_argv)."""
    argv = [sys.executable, "-m", "triage_agent", scenario["symptom"], "--namespaces",
            ",".join(scenario["namespaces"]), "--kubeconfig", kubeconfig, "--json",
            "--audit-log", audit_log]
    if prometheus_url:
        argv += ["--prometheus-url", prometheus_url]
    if live and model:
        argv += ["--model", model]
    if live:
        argv += list(endpoint)
    # --verify: a replay makes the review too (a fixture without its answer says so)
    return argv if live else argv + ["--replay", str(grade.resolve(scenario["replay"])),
                                     "--verify"]


def read_jsonl(path):
    """The JSON object lines of a file; unreadable lines and files read as nothing."""
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


def run_command(argv, *, env, timeout):
    """(exit code or None, stdout, stderr) of `argv` from the project root; a timeout or ^C
    kills the CLI and its MCP server."""
    proc = subprocess.Popen(argv, cwd=grade.PROJECT_ROOT, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return None, "", f"triage CLI timed out after {timeout:.0f} s"
    except BaseException:
        _kill_group(proc)
        raise
    return proc.returncode, stdout, stderr


def _kill_group(proc, *, grace=10.0):
    """SIGTERM first, so the CLI shuts its MCP server down (it runs in a session of its own and
    a SIGKILL of the CLI would orphan it); SIGKILL the CLI's group if that takes too long."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass
        try:
            proc.communicate(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_scenario(scenario, *, run=1, live=False, model=None, endpoint=(), simulator=Simulator,
                 cli=run_command):
    """Run one scenario once through the real CLI against kube_sim and grade it. `simulator`
    (cluster path, temp dir) -> an object like Simulator, and `cli` (argv, env=, timeout=) ->
    (exit code or None, stdout, stderr) like run_command: a test may run either in its own
    process."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="triage-eval-") as tmp:
        sim = simulator(grade.resolve(scenario["cluster"]), tmp)
        try:
            sim.wait_ready()
            exit_code, stdout, stderr = _run_cli(scenario, sim, tmp, live, (model, endpoint), cli)
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
                     model=outcome.get("model") or "", stderr_tail=stderr.strip()[-800:],
                     unsupported=grade.unsupported_claims(outcome))


def _run_cli(scenario, sim, tmp, live, asked, cli):
    """(exit code or None, stdout, stderr) of the scenario's CLI command, run by `cli`;
    `asked`: (model, endpoint flags) of a live run."""
    argv = cli_argv(scenario, kubeconfig=sim.kubeconfig, audit_log=str(Path(tmp, "audit.jsonl")),
                    live=live, prometheus_url=sim.prometheus_url, model=asked[0], endpoint=asked[1])
    # kubectl's discovery cache for a simulator on a throwaway port belongs in the temp dir
    env = dict(os.environ, KUBECACHEDIR=str(Path(tmp, "kube-cache")))
    return cli(argv, env=env, timeout=LIVE_TIMEOUT if live else REPLAY_TIMEOUT)


def _parse_outcome(stdout):
    try:
        outcome = json.loads(stdout)
    except ValueError:
        return None
    return outcome if isinstance(outcome, dict) else None


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
    p = argparse.ArgumentParser(prog="python3 -m triage_agent.evals",
                                description="Run the triage eval scenarios against kube_sim "
                                "and grade them deterministically.")
    p.add_argument("--scenario", action="append", metavar="NAME", help="scenario name under "
                   "fixtures/scenarios/ or a path to a scenario file (repeatable; default all)")
    p.add_argument("--live", action="store_true", help="use the live model (needs "
                   "ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL naming a self-hosted server, or the "
                   "endpoint flags below with their credentials) instead of each scenario's replay")
    p.add_argument("--model", metavar="NAME", help="with --live: the model to ask for, e.g. "
                   "the one a self-hosted server serves, or a Bedrock model id (default: the "
                   "triage CLI's)")
    endpoint = p.add_argument_group("with --live, where the model runs (the triage CLI's flags, "
                                     "passed on; docs/enterprise-models.md)")
    endpoint.add_argument("--provider", choices=("anthropic", "bedrock", "vertex"),
                          help="the Anthropic API (or a gateway, or a self-hosted server), Amazon "
                          "Bedrock or Google Vertex AI (default: the triage CLI's, anthropic)")
    endpoint.add_argument("--region", help="bedrock: the AWS region; vertex: the location")
    endpoint.add_argument("--project", help="vertex: the Google Cloud project id")
    endpoint.add_argument("--vertex-token-command", metavar="COMMAND",
                          help="vertex: a command that prints an access token")
    endpoint.add_argument("--base-url", metavar="URL", help="a gateway, a self-hosted server, or "
                          "a Bedrock or Vertex endpoint")
    endpoint.add_argument("--header", action="append", metavar="'NAME: VALUE'",
                          help="an extra request header for a gateway, repeatable")
    p.add_argument("--runs", type=_runs, default=1, metavar="N", help="runs per scenario; "
                   "the pass rate becomes pass^N (scenarios that passed all N runs)")
    p.add_argument("--min-pass", type=_rate, default=1.0, metavar="RATE",
                   help="exit 1 when the pass rate is below this (default 1.0)")
    p.add_argument("--json", action="store_true", help="print one JSON object, not a table")
    p.add_argument("--results", metavar="FILE", help="append one JSON line per run to FILE")
    return p


def main(argv=None, *, stdout=None, stderr=None, simulator=Simulator, cli=run_command):
    """Run the evaluation; returns the exit code. `simulator` and `cli` are run_scenario's."""
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    endpoint = endpoint_argv(args)
    if endpoint and not args.live:
        print("evaluate: --provider, --region, --project, --vertex-token-command, --base-url and "
              "--header choose a live run's endpoint: add --live", file=stderr)
        return 2
    problem = live_endpoint_problem(endpoint, args.model) if args.live else None
    if problem:
        print(f"evaluate: --live cannot reach a model: {problem}; without --live the replays run",
              file=stderr)
        return 2
    try:
        scenarios = [grade.load_scenario(ref) for ref in args.scenario or grade.scenario_names()]
        for scenario in scenarios if not args.live else ():
            replay.load_fixture(grade.resolve(scenario["replay"]))
    except (grade.ScenarioError, replay.FixtureError) as exc:
        print(f"evaluate: {exc}", file=stderr)
        return 2
    if not scenarios:
        print(f"evaluate: no scenarios in {grade.SCENARIO_DIR} (the evaluator runs from a "
              "source checkout, where fixtures/ is)", file=stderr)
        return 2
    try:  # before any run: a live evaluation is paid for, its lines must have somewhere to go
        if args.results:
            scorecard.prepare_results(args.results)
    except OSError as exc:
        print(f"evaluate: cannot write --results {args.results}: {exc}", file=stderr)
        return 2
    results, interrupted = [], None
    with terminal.StopSignals() as signals:
        try:
            for scenario in scenarios:
                for run in range(1, args.runs + 1):
                    results.append(run_scenario(scenario, run=run, live=args.live, model=args.model,
                                                endpoint=endpoint, simulator=simulator, cli=cli))
                    if not args.json:
                        print(f"evaluate: {scenario['name']} run {run}: "
                              f"{'PASS' if results[-1].passed else 'FAIL'}", file=stderr)
        except KeyboardInterrupt as exc:
            print(f"evaluate: {terminal.reason(exc)}; reporting the runs finished so far",
                  file=stderr)
            interrupted = signals.exit_code()
        signals.disarm()
        code = finish(args, results, stdout, stderr)
    return interrupted or code


def finish(args, results, stdout, stderr):
    """Print the table or JSON, append --results, and pick the exit code."""
    totals, commit = scorecard.summary(results, runs=args.runs), scorecard.git_commit()
    if args.json:
        print(json.dumps({"summary": totals, "min_pass": args.min_pass,
                          "results": [r.record(commit=commit, live=args.live) for r in results]},
                         indent=1), file=stdout)
    else:
        print(scorecard.format_table(results, runs=args.runs), file=stdout)
        print(scorecard.summary_line(totals), file=stdout)
    if args.results:
        try:
            scorecard.append_results(args.results, results, live=args.live, commit=commit)
        except OSError as exc:
            print(f"evaluate: cannot write --results {args.results}: {exc}", file=stderr)
            return 2
    return 0 if results and totals["pass_rate"] >= args.min_pass else 1


if __name__ == "__main__":
    sys.exit(main())
