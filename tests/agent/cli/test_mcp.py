"""MCP server failures through the real CLI: a tool call that hangs past its
timeout becomes an error result and the run goes on; a server that crashes and will not come back
ends the run with mcp_error (exit 4). Each still prints the outcome. (Signals mid-run, ^C
included: test_cli_signals.py.)

The MCP server here is a small stdio script written to a temp dir, with read-only tools."""

import json
import sys

from tests.support.fake_messages_api import SMALL_USAGE, response, tool_use
from tests.agent.cli.test_cli import ROOT, run_cli_here

SERVER = r'''
import json, os, signal, sys
pidfile = sys.argv[1]                     # its pid, written whole; every start adds a line to .starts
with open(pidfile + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(pidfile + ".tmp", pidfile)
with open(pidfile + ".starts", "a") as f:
    f.write("start\n")
if open(pidfile + ".starts").read().count("start") > 1 and "--die-on-restart" in sys.argv:
    sys.exit("fatal: cannot come back")
if "--stall" in sys.argv:                 # never answers initialize; exits at the end of its input
    sys.stdin.read()
    sys.exit(0)
if "--linger" in sys.argv:                # outlives the end of its input and ignores SIGTERM
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
RO = {"readOnlyHint": True}
TOOLS = [{"name": n, "description": n, "annotations": RO,
          "inputSchema": {"type": "object", "properties": {"namespace": {"type": "string"}}}}
         for n in ("get_pods", "get_logs", "crash")]
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    rid, method = m.get("id"), m.get("method")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-11-25",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "t", "version": "0"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name = m["params"]["name"]
        if name == "crash":
            os._exit(70)
        if name == "get_pods":
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [
                {"type": "text", "text": "web-1 Running"}], "isError": False}})
        # get_logs: never answers
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})
if "--linger" in sys.argv:
    open(pidfile + ".eof", "w").close()
    while True:
        signal.pause()
'''


def call(tid, name):
    return tool_use(tid, name, {"namespace": "prod"})


def message(stop, *blocks):
    return response(stop, *blocks, usage=SMALL_USAGE)


def setup(tmp_path, *responses, die_on_restart=False):
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json.dumps({"description": "t", "responses": list(responses)}))
    command = f"{sys.executable} {server} {tmp_path / 'server.pid'}"
    if die_on_restart:
        command += " --die-on-restart"
    return ["web pods fail", "--namespaces", "prod", "--replay", str(fixture), "--mcp", command,
            "--json"]


def test_hanging_call_times_out_and_the_run_goes_on(tmp_path):
    args = setup(tmp_path, message("tool_use", call("toolu_1", "get_logs")),
                 message("tool_use", call("toolu_2", "get_pods")))
    out = run_cli_here(*args, "--mcp-timeout", "0.2")
    outcome = json.loads(out.stdout)
    assert out.returncode == 3 and outcome["stop"] == "replay_exhausted", out.stderr
    assert outcome["tool_calls"] == 2  # the hung call counted, the next one still ran
    assert "get_pods" in out.stderr and "executed" in out.stderr


def test_server_crash_without_recovery_is_mcp_error(tmp_path):
    args = setup(tmp_path, message("tool_use", call("toolu_1", "get_pods")),
                 message("tool_use", call("toolu_2", "crash")), die_on_restart=True)
    out = run_cli_here(*args)
    outcome = json.loads(out.stdout)
    assert out.returncode == 4 and outcome["stop"] == "mcp_error", out.stderr
    assert outcome["tool_calls"] == 1 and "cannot come back" in outcome["error"]
    assert "cost: " in out.stderr and "Traceback" not in out.stderr


def test_server_that_does_not_start_is_exit_4():
    out = run_cli_here("x", "--namespaces", "prod", "--replay", str(ROOT / "fixtures" / "replay" /
                                                                     "refusal.json"),
                       "--mcp", f"{sys.executable} -c 'raise SystemExit(3)'")
    assert out.returncode == 4 and "MCP server" in out.stderr and "Traceback" not in out.stderr
