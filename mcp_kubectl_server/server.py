"""MCP over stdio: newline-delimited JSON-RPC 2.0 framing, both protocol eras, method dispatch.

Handshake revisions (2025-11-25 back to 2024-11-05):

    client                                   server
    initialize {protocolVersion}      ->     <- {protocolVersion, capabilities{tools}, serverInfo}
    notifications/initialized         ->     (no reply: notifications never get one)
    ping | tools/list | tools/call    ->     <- result | error

Revision 2026-07-28, stateless: no handshake, each request carries its own `_meta`:

    server/discover {_meta}           ->     <- {resultType, supportedVersions, capabilities,
                                                 instructions, ttlMs, cacheScope, _meta{serverInfo}}
    tools/list | tools/call {_meta}   ->     <- {resultType: complete, ..., _meta{serverInfo}}
    _meta naming another version      ->     <- -32022 {data: {supported, requested}}
    _meta without clientCapabilities  ->     <- -32602

Both eras are served on the same stream: a request whose params carry
`_meta["io.modelcontextprotocol/protocolVersion"]` (and every server/discover) is answered
statelessly, anything else as the handshake revisions answer it.

    notifications/cancelled {requestId} ->   the read in progress is stopped, no reply is sent
    EOF on stdin                      ->     exit 0

A reader thread turns stdin lines into messages (so a cancellation is seen while a tool reads
the cluster, and shuts that read's socket at once); the main thread answers them in order.
stdout carries protocol messages only. Bad lines become JSON-RPC errors (-32700 unparsable,
-32600 invalid request or batch array, -32601 unknown method, -32602 bad params or unknown tool),
with the request id whenever it could be read; tool failures are results with isError true.
"""

import json
import queue
import threading
import time

from mcp_kubectl_server import __version__
from mcp_kubectl_server.tools import registry
from mcp_kubectl_server.read.errors import CancelledError
from mcp_kubectl_server.redact import redact
from mcp_kubectl_server.tools.spec import check_arguments, check_scope

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # handshake era
MODERN_VERSIONS = ("2026-07-28",)  # stateless: per-request _meta, server/discover
SUPPORTED_VERSIONS = MODERN_VERSIONS + PROTOCOL_VERSIONS
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
UNSUPPORTED_VERSION = -32022
TOOLS_TTL_MS = 3_600_000  # the tool list never changes while a server process runs
MAX_LINE_BYTES = 1024 * 1024
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700, -32600, -32601, -32602, -32603)
SERVER_INFO = {"name": "mcp-kubectl-server", "title": "Read-only kubectl", "version": __version__}
INSTRUCTIONS = ("Read-only kubectl tools for incident triage. Start with get_pods, then describe_pod "
                "for an unhealthy pod; for a restart loop read get_logs with previous=true. When "
                "the pods look healthy, get_services, get_storage, get_quotas and get_config show "
                "what surrounds them; get_network_policies says which clients may reach them; "
                "get_workloads and describe_workload show rollouts, Jobs and autoscalers, get_nodes "
                "and describe_node the nodes. With a Prometheus, get_metrics, list_metrics and "
                "query_metrics read metrics in one namespace (the server scopes every query). "
                "Secrets are never read. Nothing here can change the cluster.")
_EOF = object()


class RpcError(Exception):
    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code, self.data = code, data


class Cancellations:
    """Ids of requests read but not yet answered, and which of them the client cancelled.

    Only a request still open can be cancelled, so a late cancellation (the reply already went
    out) or one for an id never sent leaves nothing behind. `on_cancel(request_id)` runs on the
    reader thread right after a cancellation is recorded (the server stops the read in progress)."""

    def __init__(self, on_cancel=None):
        self._lock = threading.Lock()
        self._open, self._cancelled = set(), set()
        self._on_cancel = on_cancel

    def opened(self, request_id):
        with self._lock:
            self._open.add(_id_key(request_id))

    def cancel(self, request_id):
        with self._lock:
            if _id_key(request_id) not in self._open:
                return
            self._cancelled.add(_id_key(request_id))
        if self._on_cancel is not None:
            self._on_cancel(request_id)

    def closed(self, request_id):
        with self._lock:
            self._open.discard(_id_key(request_id))
            self._cancelled.discard(_id_key(request_id))

    def is_cancelled(self, request_id):
        return _id_key(request_id) in self._cancelled


def read_messages(stream, out_queue, cancellations):
    """Reader thread: parse each line; record cancellations at once; _EOF at the end."""
    try:
        _read_lines(stream, out_queue, cancellations)
    finally:  # whatever happens here, the main thread must not wait forever
        out_queue.put(_EOF)


def _read_lines(stream, out_queue, cancellations):
    while True:
        line = stream.readline(MAX_LINE_BYTES + 1)
        if not line:
            break
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = stream.readline(MAX_LINE_BYTES)
            out_queue.put(RpcError(INVALID_REQUEST, f"message longer than {MAX_LINE_BYTES} bytes"))
            continue
        if not line.strip():
            continue
        try:
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            out_queue.put(RpcError(PARSE_ERROR, f"parse error: {exc}"))
            continue
        except RecursionError:  # valid JSON nested deeper than the parser's recursion limit
            out_queue.put(RpcError(PARSE_ERROR, "parse error: JSON nested too deeply"))
            continue
        if isinstance(message, dict) and message.get("method") == "notifications/cancelled":
            params = message.get("params")
            if isinstance(params, dict) and _valid_id(params.get("requestId")):
                cancellations.cancel(params["requestId"])
        elif isinstance(message, dict) and "method" in message and _valid_id(message.get("id")):
            cancellations.opened(message["id"])
        out_queue.put(message)


def _valid_id(value):
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _id_key(value):
    return (type(value).__name__, value)


class Server:
    """Answers MCP requests with the read-only tools; `serve()` runs until EOF.

    `reader` is a reader.Reader (or anything with its methods); `tools` a registry.Registry."""

    def __init__(self, reader, *, allowed_namespaces, stdin, stdout, stderr, quiet=False, tools=None):
        self.reader = reader
        self.tools = tools or registry.load(metrics_tools=getattr(reader, "prometheus", None) is not None)
        self.allowed = tuple(allowed_namespaces)
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.quiet = quiet
        self.cancellations = Cancellations(on_cancel=self._stop_read)
        self._running = None  # _id_key of the tools/call now reading, if any
        self.methods = {"initialize": self.initialize, "ping": lambda params, request_id: {},
                        "server/discover": self.discover,
                        "tools/list": self.tools_list, "tools/call": self.tools_call}

    def serve(self):
        """Answer messages until stdin ends; returns the exit code."""
        messages = queue.Queue()
        threading.Thread(target=read_messages, args=(self.stdin, messages, self.cancellations),
                         daemon=True).start()
        while True:
            message = messages.get()
            if message is _EOF:
                return 0
            try:
                reply = self.handle(message)
                if reply is not None:
                    self.send(reply)
            except BrokenPipeError:
                return 0
            finally:
                if isinstance(message, dict) and _valid_id(message.get("id")):
                    self.cancellations.closed(message["id"])

    def send(self, reply):
        self.stdout.write(json.dumps(reply, ensure_ascii=True, separators=(",", ":")).encode() + b"\n")
        self.stdout.flush()

    def handle(self, message):
        """One parsed message -> the reply dict, or None (notifications, responses, cancelled)."""
        if isinstance(message, RpcError):
            return _error(None, message.code, str(message))
        if isinstance(message, list):
            return _error(None, INVALID_REQUEST, "batch arrays are not supported: send one JSON-RPC"
                                                 " object per line")
        if not isinstance(message, dict):
            return _error(None, INVALID_REQUEST, "a JSON-RPC message must be an object")
        if message.get("jsonrpc") != "2.0":
            return _error(_readable_id(message), INVALID_REQUEST,
                          'not a JSON-RPC 2.0 object (need "jsonrpc": "2.0")')
        if "method" not in message:
            if "result" in message or "error" in message:
                return None  # a response to a request we never send: ignore it
            return _error(_readable_id(message), INVALID_REQUEST, "a request needs a method")
        method, has_id = message["method"], "id" in message
        if has_id and not _valid_id(message["id"]):
            return _error(None, INVALID_REQUEST, "id must be a string or an integer")
        if not isinstance(method, str):
            return _error(message.get("id"), INVALID_REQUEST, "method must be a string") if has_id else None
        if not has_id:
            return None  # notifications (initialized, cancelled, unknown ones) never get a reply
        request_id = message["id"]
        try:
            params = message.get("params", {})
            if not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "params must be an object")
            if method not in self.methods:
                raise RpcError(METHOD_NOT_FOUND, f"method not found: {method[:100]}")
            modern = _modern_request(method, params)
            result = self.methods[method](params, request_id)
            if modern:
                result = dict(result, resultType="complete", _meta={META_SERVER_INFO: SERVER_INFO})
            return {"jsonrpc": "2.0", "id": request_id, "result": result}
        except RpcError as exc:
            return _error(request_id, exc.code, str(exc), exc.data)
        except CancelledError:
            return None
        except Exception as exc:  # a bug must cost one request, never the server
            import traceback  # here: only a bug needs it, and it costs a start 4 ms of CPU
            traceback.print_exc(file=self.stderr)
            return _error(request_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}")

    def initialize(self, params, request_id):
        self.reader.prepare()  # a no-op when __main__ launched it already; else the cue
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": SERVER_INFO, "instructions": INSTRUCTIONS}

    def discover(self, params, request_id):
        self.reader.prepare()  # the stateless era's first request (see initialize)
        return {"supportedVersions": list(SUPPORTED_VERSIONS),
                "capabilities": {"tools": {"listChanged": False}},
                "instructions": INSTRUCTIONS, "ttlMs": TOOLS_TTL_MS, "cacheScope": "public"}

    def tools_list(self, params, request_id):
        self.reader.prepare()  # no initialize in the stateless era (see initialize)
        cursor = params.get("cursor")
        if cursor not in (None, ""):
            raise RpcError(INVALID_PARAMS, "invalid cursor: every tool is on the first page")
        result = {"tools": [tool.definition() for tool in self.tools.tools.values()]}
        if _modern_request("tools/list", params):
            result.update(ttlMs=TOOLS_TTL_MS, cacheScope="public")
        return result

    def tools_call(self, params, request_id):
        name, arguments = params.get("name"), params.get("arguments", {})
        tools = self.tools.tools
        if not isinstance(name, str) or name not in tools:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {str(name)[:100]!r}. Available tools: "
                                           f"{', '.join(tools)}")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, "arguments must be an object")
        started = time.monotonic()
        problems = check_arguments(tools[name], arguments)
        refusal = None if problems else check_scope(tools[name], arguments, self.allowed)
        if problems:
            text, is_error = f"invalid arguments for {name}: " + "; ".join(problems), True
        elif refusal:
            text, is_error = refusal, True
        else:
            text, is_error = self._run(name, arguments, request_id)
        text = redact(text)
        self.audit(name, arguments, is_error, len(text.encode()), time.monotonic() - started)
        return {"content": [{"type": "text", "text": text}], "isError": is_error}

    def _run(self, name, arguments, request_id):
        view = self.reader.for_call(cancelled=lambda: self.cancellations.is_cancelled(request_id))
        self._running = _id_key(request_id)
        try:
            return registry.run_tool(view, name, arguments, registry=self.tools)
        finally:
            self._running = None

    def _stop_read(self, request_id):
        """Reader thread: a cancelled call that is reading now gets its socket shut."""
        if self._running == _id_key(request_id):
            self.reader.interrupt()

    def audit(self, name, arguments, is_error, size, seconds):
        if self.quiet:
            return
        shown = redact(json.dumps(arguments, sort_keys=True, ensure_ascii=True))[:500]
        print(f"mcp-kubectl-server audit tool={name} arguments={shown} is_error={str(is_error).lower()}"
              f" bytes={size} ms={round(seconds * 1000)}", file=self.stderr, flush=True)


def _modern_request(method, params):
    """True for a request of the stateless revision (its version checked); RpcError for one
    whose _meta names a version this server does not serve or lacks what the revision requires."""
    meta = params.get("_meta")
    version = meta.get(META_VERSION) if isinstance(meta, dict) else None
    if version is None and method != "server/discover":
        return False
    if not isinstance(version, str):
        raise RpcError(INVALID_PARAMS, f"params._meta[{META_VERSION!r}] is required (a string)")
    if version not in MODERN_VERSIONS:
        raise RpcError(UNSUPPORTED_VERSION, "Unsupported protocol version",
                       {"supported": list(SUPPORTED_VERSIONS), "requested": version[:100]})
    if not isinstance(meta.get(META_CAPABILITIES), dict):
        raise RpcError(INVALID_PARAMS, f"params._meta[{META_CAPABILITIES!r}] is required (an object)")
    return True


def _readable_id(message):
    request_id = message.get("id")
    return request_id if _valid_id(request_id) else None


def _error(request_id, code, message, data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
