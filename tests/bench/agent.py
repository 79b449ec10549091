"""Agent benchmark figures for `make bench` (not a test: prints medians, asserts nothing).

- cold start of `python3 -m triage_agent --help`, in interleaved pairs with a bare interpreter
  start (tests/bench/run.py `paired`; shared machines are noisy: the ratio is the figure to compare)
- wall time of the crashloop replay end to end (CLI subprocess, real server, kubectl, kube_sim),
  paired within each run with the time spent in tool calls (MCP round trip + the read, from the
  trace's execute_tool spans): the median share of each run spent outside them
- request body bytes per step across that run (in-process, same fixture, same server)
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fixtures.kube_sim.sim import start_sim
from tests.bench.run import PAIRS, pair_line, paired
from triage_agent import loop, prompts
from triage_agent.model import replay
from triage_agent.mcp.client import McpStdioClient

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "replay" / "crashloop.json"
SYMPTOM = "checkout pods in prod keep restarting"


def _env():
    return {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}


def cold_start(*args):
    """Seconds to run the interpreter once with these arguments."""
    started = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, env=_env(),
                   capture_output=True, timeout=60, check=True)
    return time.perf_counter() - started


def replay_once(sim, trace):
    """(wall seconds, seconds inside tool calls) of one replay through the CLI."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "triage_agent", SYMPTOM, "--namespaces", "prod",
                    "--replay", str(FIXTURE), "--kubeconfig", sim.kubeconfig, "--json",
                    "--trace", str(trace)], cwd=ROOT, env=_env(), capture_output=True,
                   timeout=120, check=True)
    wall = time.perf_counter() - started
    spans = [json.loads(line) for line in Path(trace).read_text().splitlines()]
    return wall, sum(int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])
                     for s in spans if s["name"].startswith("execute_tool ")) / 1e9


def replay_wall(sim, workdir):
    """Medians of (wall seconds, seconds inside tool calls, share outside them) of the replay
    through the CLI; the share is taken per run."""
    runs = [replay_once(sim, Path(workdir) / f"trace{i}.jsonl") for i in range(PAIRS)]
    return (statistics.median(wall for wall, _ in runs),
            statistics.median(tools for _, tools in runs),
            statistics.median((wall - tools) / wall for wall, tools in runs))


def body_bytes(sim):
    """Request body bytes for each model call of the replay."""
    model = replay.ReplayModel(replay.load_fixture(FIXTURE))
    argv = [sys.executable, "-m", "mcp_kubectl_server", "--allow-namespaces", "prod", "--quiet",
            "--kubeconfig", sim.kubeconfig]
    env = {"PYTHONPATH": str(ROOT), "KUBECACHEDIR": os.environ["KUBECACHEDIR"]}
    with McpStdioClient(argv, env=env) as tools:
        loop.run_triage(SYMPTOM, model=model, tools=tools,
                        policy=loop.rules.Policy(namespaces=("prod",)),
                        toolset=prompts.build_toolset(tools.list()))
    return [len(json.dumps(request).encode()) for request in model.requests]


def main():
    """Print the figures (kubectl's discovery cache kept in a temp dir, out of ~/.kube)."""
    saved = os.environ.get("KUBECACHEDIR")
    with tempfile.TemporaryDirectory(prefix="triage-bench-") as cache:
        os.environ["KUBECACHEDIR"] = cache
        try:
            _print_figures()
        finally:
            if saved is None:
                os.environ.pop("KUBECACHEDIR", None)
            else:
                os.environ["KUBECACHEDIR"] = saved


def _print_figures():
    started = paired(lambda: cold_start("-m", "triage_agent", "--help"),
                     lambda: cold_start("-c", "pass"))
    print(pair_line("cold start `python3 -m triage_agent --help`", "bare `python3 -c pass`",
                    started))
    with tempfile.TemporaryDirectory() as workdir, start_sim("crashloop") as sim:
        wall, in_tools, outside = replay_wall(sim, workdir)
        print(f"crashloop replay end to end: {wall * 1000:,.0f} ms wall; in tool calls (MCP round "
              f"trip + the read) {in_tools * 1000:,.0f} ms; share outside them {outside:.0%} "
              f"(medians of {PAIRS} runs, the share taken per run)")
        sizes = body_bytes(sim)
    print("request body bytes per step: " + ", ".join(f"{n:,}" for n in sizes))


if __name__ == "__main__":
    main()
