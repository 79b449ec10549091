"""Agent benchmark figures for `make bench` (not a test: prints medians, asserts nothing).

- cold start of `python3 -m triage_agent --help`, next to a bare interpreter start on the same
  machine in the same run (shared machines are noisy: the ratio is the figure to compare)
- wall time of the crashloop replay end to end (CLI subprocess, real server, kubectl, kube_sim),
  and the share of it spent outside tool calls (tool calls = MCP round trip + kubectl, from the
  trace's execute_tool spans)
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

from fixtures.kube_sim import start_sim
from triage_agent import loop, prompts, replay
from triage_agent.mcp_client import McpStdioClient

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "fixtures" / "replay" / "crashloop.json"
SYMPTOM = "checkout pods in prod keep restarting"
RUNS = 5


def _env():
    return {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}


def cold_start(*args):
    """Median seconds to run the interpreter with these arguments."""
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        subprocess.run([sys.executable, *args], cwd=ROOT, env=_env(),
                       capture_output=True, timeout=60, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def replay_wall(sim, workdir):
    """Median (wall seconds, seconds inside tool calls) of the replay through the CLI."""
    walls, tools = [], []
    for i in range(RUNS):
        trace = Path(workdir) / f"trace{i}.jsonl"
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "triage_agent", SYMPTOM, "--namespaces", "prod",
                        "--replay", str(FIXTURE), "--kubeconfig", sim.kubeconfig, "--json",
                        "--trace", str(trace)], cwd=ROOT, env=_env(), capture_output=True,
                       timeout=120, check=True)
        walls.append(time.perf_counter() - started)
        spans = [json.loads(line) for line in trace.read_text().splitlines()]
        tools.append(sum(int(s["endTimeUnixNano"]) - int(s["startTimeUnixNano"])
                         for s in spans if s["name"].startswith("execute_tool "))
                     / 1e9)
    return statistics.median(walls), statistics.median(tools)


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
    bare, helped = cold_start("-c", "pass"), cold_start("-m", "triage_agent", "--help")
    print(f"cold start `python3 -m triage_agent --help`: {helped * 1000:.0f} ms "
          f"(median of {RUNS}); bare `python3 -c pass`: {bare * 1000:.0f} ms; "
          f"ratio {helped / bare:.2f}")
    with tempfile.TemporaryDirectory() as workdir, start_sim("crashloop") as sim:
        wall, in_tools = replay_wall(sim, workdir)
        print(f"crashloop replay end to end: {wall * 1000:.0f} ms wall (median of {RUNS}); "
              f"{in_tools * 1000:.0f} ms in tool calls (MCP + kubectl), "
              f"{(wall - in_tools) / wall:.0%} outside them")
        sizes = body_bytes(sim)
    print("request body bytes per step: " + ", ".join(f"{n:,}" for n in sizes))


if __name__ == "__main__":
    main()
