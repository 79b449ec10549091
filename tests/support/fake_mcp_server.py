"""A scriptable MCP stdio server for the client tests (stdlib only; behaviour by argv flags).

    python fake_mcp_server.py [--pages N] [--noise] [--offer VERSION] [--die-at-start]
                              [--ignore-eof] [--ignore-term] [--marker FILE [--die-from N]]
                              [--read-only TOOL,...] [--rename TOOL=NAME ...]
                              [--modern VERSION,... [--ttl-ms N] [--input-required]] [--big]

Tools: echo (text of its arguments), mixed (text + image + audio + resource blocks), fail
(isError), rpc_error (a JSON-RPC error), probe (asks the client `ping` and `roots/list`, reports
the answers), hang (never answers), seen (the notifications received so far), env (sorted
environment names), quit (answers, then exits), crash (exits without answering); with --big
also big_lines (5 MB of numbered lines), big_line (one 1 MB line), big_binary (256 KB of
bytes that look binary, sent as text) and big_page (20 to 40 KB of log lines, by its argument n).
Every tool takes an optional `namespace`, so the loop can offer it. No tool is annotated unless
--read-only names it (readOnlyHint true); --rename lists a tool under another name (dotted, too
long for the API, or shadowing a built-in) and answers calls to it.

--modern makes it a server of the stateless revision only, serving the versions named: it
answers server/discover, rejects initialize and any request whose _meta names another version
with -32022 (the supported list in its data), puts resultType on every result and ttlMs (default
0) on tools/list, and numbers each tools/list in its descriptions ("echo tool (list #2)"). --input-required answers tools/call with an
interim input_required result, which this project's client does not take.
"""

import argparse
import json
import os
import signal
import sys
import threading

TOOLS = ["echo", "mixed", "fail", "rpc_error", "probe", "hang", "seen", "env", "quit", "crash"]


def page(args):
    """20 to 40 KB of log-like lines, different for every `n` (a long investigation's results)."""
    n = int((args or {}).get("n") or 0)
    size = 20 * 1024 + (n * 7919) % (20 * 1024)
    lines = [f"2026-11-30T02:{n % 60:02d}:{i % 60:02d}Z page={n} line={i} level=info "
             f"msg=\"request served\" path=/api/v1/orders/{n * 1000 + i} status=200" for i in range(size // 100)]
    return "\n".join(lines)


BIG = {"big_lines": lambda args: "\n".join(f"line {i:06d} " + "z" * 88 for i in range(52_429)),
       "big_line": lambda args: "q" * (1024 * 1024),
       "big_binary": lambda args: bytes((i * 131 + 7) % 256
                                        for i in range(256 * 1024)).decode("latin-1"),
       "big_page": page}


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


MODERN = []  # the stateless versions served; empty: a handshake-era server


def result(request_id, value):
    if MODERN and isinstance(value, dict):
        value = dict(value, resultType=value.get("resultType", "complete"))
    send({"jsonrpc": "2.0", "id": request_id, "result": value})


def unsupported(request_id, requested):
    send({"jsonrpc": "2.0", "id": request_id, "error": {
        "code": -32022, "message": "Unsupported protocol version",
        "data": {"supported": MODERN, "requested": requested}}})


def text(request_id, body, is_error=False):
    result(request_id, {"content": [{"type": "text", "text": body}], "isError": is_error})


class Server:
    def __init__(self, opts):
        self.opts = opts
        self.seen = []
        self.lines = iter(sys.stdin.readline, "")

    def read(self):
        for line in self.lines:
            try:
                return json.loads(line)
            except ValueError:
                continue
        return None

    def run(self):
        while True:
            message = self.read()
            if message is None:
                break
            if "id" not in message:
                self.seen.append({"method": message.get("method"),
                                  "params": message.get("params")})
                continue
            handler = getattr(self, "do_" + message["method"].replace("/", "_"), None)
            meta = (message.get("params") or {}).get("_meta") or {}
            requested = meta.get("io.modelcontextprotocol/protocolVersion")
            if MODERN and (message["method"] == "initialize" or requested not in MODERN):
                unsupported(message["id"], requested or (message.get("params") or {}).get(
                    "protocolVersion"))
            elif handler is None:
                send({"jsonrpc": "2.0", "id": message["id"],
                      "error": {"code": -32601, "message": "no such method"}})
            else:
                handler(message["id"], message.get("params") or {})
        if self.opts.ignore_eof:
            threading.Event().wait(60)

    def do_initialize(self, rid, params):
        print(f"client offered {params.get('protocolVersion')}", file=sys.stderr, flush=True)
        if self.opts.noise:
            print("fake server starting up (not JSON)", flush=True)
            send({"jsonrpc": "2.0", "method": "notifications/message",
                  "params": {"level": "info", "data": "hello"}})
        result(rid, {"protocolVersion": self.opts.offer or params.get("protocolVersion"),
                     "capabilities": {"tools": {}},
                     "serverInfo": {"name": "fake-mcp", "version": "0.0.1"}})

    def do_server_discover(self, rid, params):
        if not MODERN:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}})
            return
        result(rid, {"supportedVersions": MODERN, "capabilities": {"tools": {}},
                     "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake-modern",
                                                                       "version": "0.0.2"}},
                     "ttlMs": self.opts.ttl_ms, "cacheScope": "public"})

    def do_tools_list(self, rid, params):
        self.lists = getattr(self, "lists", 0) + 1
        size = max(1, -(-len(TOOLS) // self.opts.pages))
        start = int(params.get("cursor") or 0)
        page = {"tools": [self.definition(n) for n in TOOLS[start:start + size]]}
        if start + size < len(TOOLS):
            page["nextCursor"] = str(start + size)
        if self.opts.noise:
            print("", flush=True)
            print("[1, 2, 3] <- still not a message", flush=True)
        if MODERN:
            page.update(ttlMs=self.opts.ttl_ms, cacheScope="public")
        result(rid, page)

    def definition(self, name):
        served = f" (list #{self.lists})" if MODERN else ""  # which fetch a cached list is from
        tool = {"name": self.opts.names.get(name, name), "description": f"{name} tool{served}",
                "inputSchema": {"type": "object",
                                "properties": {"namespace": {"type": "string"}}}}
        if name in self.opts.read_only:
            tool["annotations"] = {"readOnlyHint": True}
        return tool

    def do_tools_call(self, rid, params):
        name, args = params.get("name"), params.get("arguments")
        name = {listed: real for real, listed in self.opts.names.items()}.get(name, name)
        if self.opts.input_required:
            result(rid, {"resultType": "input_required", "inputRequests": {}})
        elif name == "echo":
            text(rid, json.dumps(args, sort_keys=True))
        elif name in BIG:
            text(rid, BIG[name](args))
        elif name == "mixed":
            result(rid, {"content": [
                {"type": "text", "text": "first"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///x", "text": "embedded"}},
                {"type": "resource_link", "uri": "file:///y", "name": "y"},
                {"type": "text", "text": "last"}]})
        elif name == "fail":
            text(rid, "pods is forbidden", is_error=True)
        elif name == "rpc_error":
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32602, "message": "unknown tool: rpc_error"}})
        elif name == "probe":
            self.probe(rid)
        elif name == "ping_later":
            self.ping_later(rid)
        elif name == "seen":
            text(rid, json.dumps(self.seen))
        elif name == "env":
            text(rid, " ".join(sorted(os.environ)))
        elif name == "quit":
            text(rid, "bye")
            sys.exit(0)
        elif name == "crash":
            print("panic: the fake server crashed on purpose", file=sys.stderr, flush=True)
            os._exit(70)
        # "hang": no answer at all

    def ping_later(self, rid):
        """Answer, then ping the now idle client and wait for its answer before reading on."""
        text(rid, "pinging")
        send({"jsonrpc": "2.0", "id": "s-idle-ping", "method": "ping"})
        message = self.read()
        if message is not None and message.get("id") == "s-idle-ping" and "result" in message:
            print("pong received", file=sys.stderr, flush=True)
        else:
            print(f"no pong, got {message!r}", file=sys.stderr, flush=True)

    def probe(self, rid):
        send({"jsonrpc": "2.0", "id": "s-ping", "method": "ping"})
        send({"jsonrpc": "2.0", "id": "s-roots", "method": "roots/list"})
        answers = {}
        while len(answers) < 2:
            message = self.read()
            if message is None:
                return
            if message.get("id") in ("s-ping", "s-roots"):
                answers[message["id"]] = message.get("result", message.get("error"))
        text(rid, json.dumps(answers, sort_keys=True))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=1)
    parser.add_argument("--noise", action="store_true")
    parser.add_argument("--offer")
    parser.add_argument("--die-at-start", action="store_true")
    parser.add_argument("--ignore-eof", action="store_true")
    parser.add_argument("--ignore-term", action="store_true")
    parser.add_argument("--marker", help="append one line to this file per start")
    parser.add_argument("--die-from", type=int, help="die at start from the Nth start on")
    parser.add_argument("--read-only", default="", help="tools annotated readOnlyHint: true")
    parser.add_argument("--rename", action="append", default=[], metavar="TOOL=NAME")
    parser.add_argument("--modern", default="", help="stateless versions served, comma-separated")
    parser.add_argument("--ttl-ms", type=int, default=0)
    parser.add_argument("--input-required", action="store_true")
    parser.add_argument("--big", action="store_true", help="also serve the big_* tools")
    opts = parser.parse_args()
    if opts.big:
        TOOLS.extend(BIG)
    MODERN.extend(filter(None, opts.modern.split(",")))
    opts.read_only = set(filter(None, opts.read_only.split(",")))
    opts.names = dict(pair.split("=", 1) for pair in opts.rename)
    if opts.marker:
        with open(opts.marker, "a") as marker:
            marker.write("start\n")
        with open(opts.marker) as marker:
            starts = len(marker.readlines())
        opts.die_at_start = opts.die_at_start or (opts.die_from and starts >= opts.die_from)
    if opts.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if opts.die_at_start:
        print("fatal: cannot load configuration", file=sys.stderr, flush=True)
        sys.exit(3)
    Server(opts).run()


if __name__ == "__main__":
    main()
