"""A stdio relay in front of a real MCP server that makes it look like a single-era server.

    python mcp_era_shim.py MODE -- COMMAND [ARG ...]

MODE handshake: server/discover is answered here with -32601, as a server that predates the
stateless revision answers it; everything else passes through to COMMAND.
MODE silent: server/discover gets no answer at all (a handshake-era server that ignores unknown
requests before initialize); everything else passes through.
MODE versions: server/discover is answered with -32022 naming 2025-06-18 and 2025-03-26 only,
as a server that knows the stateless revision but serves only older ones would answer it.
MODE modern: initialize is answered here with -32022 naming only 2026-07-28, as a server that
speaks only the stateless revision answers it; everything else passes through.
Each intercepted request is noted on stderr ("shim: ...") so tests can see what happened.
"""

import json
import subprocess
import sys
import threading


def relay(source, sink, lock):
    for line in source:
        with lock:
            sink.write(line)
            sink.flush()


def intercept(mode, message):
    """The reply the shim gives instead of the server, None to pass the message on, or False
    to drop it without a reply."""
    method = message.get("method") if isinstance(message, dict) else None
    if mode in ("handshake", "silent") and method == "server/discover":
        print(f"shim: {mode} server/discover", file=sys.stderr, flush=True)
        if mode == "silent":
            return False
        return {"jsonrpc": "2.0", "id": message.get("id"),
                "error": {"code": -32601, "message": "Method not found"}}
    if mode == "versions" and method == "server/discover":
        print("shim: versions server/discover", file=sys.stderr, flush=True)
        return {"jsonrpc": "2.0", "id": message.get("id"), "error": {
            "code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2025-06-18", "2025-03-26"], "requested": "2026-07-28"}}}
    if mode == "modern" and method == "initialize":
        print("shim: modern initialize", file=sys.stderr, flush=True)
        return {"jsonrpc": "2.0", "id": message.get("id"), "error": {
            "code": -32022, "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"],
                     "requested": (message.get("params") or {}).get("protocolVersion")}}}
    return None


def main(argv):
    mode, separator, command = argv[0], argv[1], argv[2:]
    assert separator == "--" and mode in ("handshake", "silent", "versions", "modern") and command
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    lock = threading.Lock()
    threading.Thread(target=relay, args=(child.stdout, sys.stdout.buffer, lock),
                     daemon=True).start()
    for line in sys.stdin.buffer:
        try:
            reply = intercept(mode, json.loads(line))
        except ValueError:
            reply = None
        if reply is None:
            child.stdin.write(line)
            child.stdin.flush()
            continue
        with lock:
            if reply is not False:
                sys.stdout.buffer.write(json.dumps(reply).encode() + b"\n")
                sys.stdout.buffer.flush()
    child.stdin.close()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
