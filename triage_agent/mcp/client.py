"""In-house MCP client over stdio, for both eras of the protocol (wire: wire.StdioPeer).

Modern revision 2026-07-28 (stateless: no handshake, every request carries its own _meta):

    client                                         server
      server/discover {_meta}                 ->   <- {resultType, supportedVersions, capabilities,
                                                       _meta{serverInfo}, instructions, ttlMs}
      tools/list {cursor?, _meta}             ->   <- {resultType, tools, nextCursor?, ttlMs, cacheScope}
      tools/call {name, arguments, _meta}     ->   <- {resultType, content, isError}
      _meta = {io.modelcontextprotocol/protocolVersion, .../clientInfo, .../clientCapabilities}
      a version the server does not serve     ->   <- error -32022 {data: {supported, requested}}

Handshake revisions 2025-11-25 back to 2024-11-05:

      initialize {protocolVersion, capabilities, clientInfo}  ->  <- {protocolVersion, serverInfo}
      notifications/initialized  ->  then tools/list and tools/call without _meta

`start()` probes with server/discover first (bounded by `probe_timeout`). A DiscoverResult that
offers 2026-07-28 makes the client modern; a -32022 or a DiscoverResult that offers only
handshake revisions leads to initialize with one of those; any other error, or silence, means
a handshake-era server and the client falls back to initialize exactly as before. The era is
kept for the life of the process (and re-probed after a restart).

tools/list is cached for the run: a modern server's `ttlMs` says how long the list stays fresh
(a handshake-era list, which carries no hint, is kept until the server restarts). A server that
dies is restarted once (fresh process, fresh probe); if it will not come back, McpError carries
its stderr tail. `notifications/cancelled {requestId}` goes out when a call outlives its timeout.
"""

import json
import os
import threading
import time

from triage_agent import __version__
from triage_agent.mcp.wire import PeerGone, RequestTimeout, RpcError, StdioPeer

MODERN_VERSION = "2026-07-28"
PROTOCOL_VERSION = "2025-11-25"  # the handshake revision offered in initialize
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SUPPORTED_VERSIONS = (MODERN_VERSION, *HANDSHAKE_VERSIONS)
UNSUPPORTED_VERSION = -32022
CLIENT_INFO = {"name": "triage-agent", "version": __version__}
# what kubectl under the server needs: its binary, config and discovery cache (KUBECACHEDIR),
# and the Go runtime's settings the operator gave it (a memory limit in a container, say)
ENV_KEEP = ("PATH", "HOME", "KUBECONFIG", "KUBECACHEDIR", "LANG",
            "GOGC", "GOMEMLIMIT", "GOMAXPROCS")
PROBE_TIMEOUT = 3.0
MAX_PAGES = 100
_NON_TEXT = {"image": "[image omitted]", "audio": "[audio omitted]"}


class McpError(Exception):
    """The MCP server cannot be used: it did not start, speaks another protocol, or died and a
    restart did not bring it back."""


class _Legacy(Exception):
    """The probe says: a handshake-era server; `version` is the one to offer, if it named one."""

    def __init__(self, version=PROTOCOL_VERSION):
        super().__init__(version)
        self.version = version


class McpStdioClient:
    """One MCP server child process: `start`, `list`, `call`, `close`; a context manager."""

    def __init__(self, argv, *, env=None, call_timeout=30.0, start_timeout=15.0,
                 probe_timeout=PROBE_TIMEOUT, max_restarts=1, close_timeout=2.0, cwd=None,
                 clock=time.monotonic):
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise McpError(f"MCP server command must be a non-empty argv list, got {argv!r}")
        self.argv = list(argv)
        self.env = {k: os.environ[k] for k in ENV_KEEP if k in os.environ}
        self.env.update(env or {})
        self.call_timeout, self.start_timeout = call_timeout, start_timeout
        self.probe_timeout = min(probe_timeout, start_timeout)
        self.max_restarts, self.close_timeout, self.cwd = max_restarts, close_timeout, cwd
        self.clock = clock
        self.restarts = 0
        self.protocol_version = self.server_info = self.era = None
        self._peer = None
        self._closed = False
        self._tools_cache = None  # (tools, fresh_until or None for "until restart")
        self._lock = threading.RLock()

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self):
        """Spawn the server and settle the era (probe, then handshake if needed); McpError if
        that fails. A client that is already running is left as it is."""
        with self._lock:
            return self._start()

    def spawn(self):
        """Start the server process without waiting for it, so that it boots while the caller
        gets on with its own start-up; start() then settles the era. McpError if it cannot run."""
        with self._lock:
            if self._peer is None or not self._peer.alive():
                self._spawn()
        return self

    def _spawn(self):
        try:
            self._peer = StdioPeer(self.argv, env=self.env, cwd=self.cwd)
        except (OSError, ValueError) as exc:
            raise McpError(f"cannot start MCP server {self.argv[0]!r}: {exc}") from None
        self._tools_cache, self.era = None, None

    def _start(self):
        alive = self._peer is not None and self._peer.alive()
        if alive and self.era is not None:
            return self
        if not alive:
            self._spawn()
        try:
            self._settle_era(time.monotonic() + self.start_timeout)
        except McpError:
            self._stop()
            raise
        return self

    def _settle_era(self, deadline):
        try:
            self._probe()
        except _Legacy as legacy:
            self._handshake(legacy.version, deadline)
        except PeerGone:
            raise self._error("exited during the handshake") from None

    def _probe(self):
        """server/discover: returns when the server is modern; _Legacy when it is not."""
        deadline = time.monotonic() + self.probe_timeout
        try:
            result = self._peer.request("server/discover", {"_meta": self._meta()}, deadline)
        except RequestTimeout:
            raise _Legacy() from None  # a handshake-era server may ignore it silently
        except RpcError as exc:
            if exc.code != UNSUPPORTED_VERSION:
                raise _Legacy() from None  # never keyed to one code: -32601, -32602, ...
            data = exc.data if isinstance(exc.data, dict) else {}
            raise _Legacy(self._pick_handshake(data.get("supported"), str(exc))) from None
        if not isinstance(result, dict) or not isinstance(result.get("supportedVersions"), list):
            raise _Legacy()
        if MODERN_VERSION not in result["supportedVersions"]:
            raise _Legacy(self._pick_handshake(result["supportedVersions"],
                                               "its server/discover answer"))
        self.era, self.protocol_version = "modern", MODERN_VERSION
        meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
        info = meta.get("io.modelcontextprotocol/serverInfo")
        self.server_info = info if isinstance(info, dict) else {}

    def _pick_handshake(self, offered, where):
        offered = offered if isinstance(offered, list) else []
        for version in HANDSHAKE_VERSIONS:
            if version in offered:
                return version
        raise McpError(f"MCP server {' '.join(self.argv)!r} supports protocol versions"
                       f" {', '.join(map(str, offered)) or '(none named)'} ({where}); this client"
                       f" speaks {', '.join(SUPPORTED_VERSIONS)}")

    def _handshake(self, offer, deadline):
        params = {"protocolVersion": offer, "capabilities": {}, "clientInfo": CLIENT_INFO}
        try:
            result = self._peer.request("initialize", params, deadline)
        except PeerGone:
            raise self._error("exited during the handshake") from None
        except RequestTimeout:
            raise self._error(f"did not answer initialize within {self.start_timeout:g} s")\
                from None
        except RpcError as exc:
            raise self._error(f"refused initialize ({exc})") from None
        answered = result.get("protocolVersion") if isinstance(result, dict) else None
        if answered not in HANDSHAKE_VERSIONS:
            raise McpError(f"MCP server {self.argv[0]!r} offered protocol version {answered!r};"
                           f" this client offered {offer} and accepts only"
                           f" {', '.join(SUPPORTED_VERSIONS)}")
        self.era, self.protocol_version = "handshake", answered
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        try:
            self._peer.notify("notifications/initialized", {})
        except PeerGone:
            raise self._error("exited during the handshake") from None

    def close(self):
        """Shut the server down: close its stdin and wait; then terminate and wait; then kill.

        Each wait is `close_timeout` seconds; a well-behaved server exits at end of input, so
        the later steps only hit one that hangs or ignores SIGTERM."""
        with self._lock:
            self._closed = True
            self._stop()

    def _stop(self):
        peer, self._peer = self._peer, None
        if peer is not None:
            peer.stop(self.close_timeout)

    @property
    def process(self):
        """The running server process (subprocess.Popen), or None."""
        peer = self._peer
        return peer.proc if peer is not None else None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def _ensure_alive(self):
        """Start, or restart a dead server once (per client); McpError when that fails."""
        if self._closed:
            raise McpError("the MCP client is closed")
        if self.era is None:  # never started, or only spawned
            self.start()
        elif self._peer is None or not self._peer.alive():
            self._restart("had exited")

    def _restart(self, why):
        code = self._peer.exit_code() if self._peer is not None else None
        tail = self.stderr_tail()
        self._stop()
        if self.restarts >= self.max_restarts:
            raise McpError(self._describe(f"{why} (exit code {code}) and was already"
                                          f" restarted {self.restarts} time(s)", tail))
        self.restarts += 1
        try:
            self.start()
        except McpError as exc:
            raise McpError(f"{exc}\n(it had {why}, exit code {code}; restart failed)") from None

    # --- requests -----------------------------------------------------------------------------

    def _meta(self):
        return {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
                "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
                "io.modelcontextprotocol/clientCapabilities": {}}

    def _request(self, method, params, deadline):
        """One request in the server's era; a modern result must be a complete one."""
        if self.era == "modern":
            params = dict(params, _meta=self._meta())
        result = self._peer.request(method, params, deadline)
        if self.era == "modern" and isinstance(result, dict):
            kind = result.get("resultType", "complete")
            if kind != "complete":
                raise RpcError(None, f"the server answered {method} with resultType {kind!r};"
                                     " this client handles only complete results")
        return result

    # --- tools --------------------------------------------------------------------------------

    def list(self) -> list:
        """All tool definitions, following `nextCursor`; served from the cache while fresh."""
        with self._lock:
            self._ensure_alive()
            cached = self._tools_cache
            if cached is not None and (cached[1] is None or self.clock() < cached[1]):
                return list(cached[0])
            try:
                tools, ttl_ms = self._list_pages()
            except PeerGone:
                self._restart("exited during tools/list")
                tools, ttl_ms = self._list_pages()
            fresh_until = None if ttl_ms is None else self.clock() + ttl_ms / 1000
            self._tools_cache = (tools, fresh_until)
            return list(tools)

    def _list_pages(self):
        tools, cursor, seen, ttls = [], None, set(), []
        for _ in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else {}
            try:
                result = self._request("tools/list", params,
                                       time.monotonic() + self.call_timeout)
            except RpcError as exc:
                raise self._error(f"refused tools/list ({exc})") from None
            except RequestTimeout:
                raise self._error(f"did not answer tools/list within {self.call_timeout:g} s")\
                    from None
            page = result.get("tools") if isinstance(result, dict) else None
            if not isinstance(page, list):
                raise self._error("answered tools/list without a tools array")
            tools.extend(t for t in page if isinstance(t, dict) and isinstance(t.get("name"), str))
            ttls.append(_ttl_ms(result) if self.era == "modern" else None)
            cursor = result.get("nextCursor")
            if cursor is None or cursor in seen:
                return tools, (None if None in ttls else min(ttls))
            seen.add(cursor)
        raise self._error(f"paginated tools/list past {MAX_PAGES} pages")

    def call(self, name, arguments) -> tuple:
        """Run one tool: (text, is_error). Timeouts and protocol errors come back as errors."""
        with self._lock:
            self._ensure_alive()
            deadline = time.monotonic() + self.call_timeout
            params = {"name": name, "arguments": arguments if arguments is not None else {}}
            try:
                return _tool_text(self._request("tools/call", params, deadline))
            except (TypeError, ValueError) as exc:
                return f"tool arguments cannot be sent as JSON: {exc}", True
            except RpcError as exc:
                return str(exc), True
            except RequestTimeout as exc:
                self._cancel(exc.request_id)
                return (f"tool call timed out after {self.call_timeout:g} s; the MCP server did"
                        " not answer and the request was cancelled", True)
            except PeerGone:
                code = self._peer.exit_code()
                self._restart("exited during a tool call")
                return (f"the MCP server exited during this call (exit code {code}); it was"
                        " restarted, the call did not complete", True)

    def _cancel(self, request_id):
        params = {"requestId": request_id, "reason": "timed out"}
        if self.era == "modern":
            params["_meta"] = self._meta()
        try:
            self._peer.notify("notifications/cancelled", params)
        except PeerGone:
            pass

    # --- errors -------------------------------------------------------------------------------

    def stderr_tail(self) -> str:
        """The last few KiB the server wrote to stderr."""
        return self._peer.stderr_tail() if self._peer is not None else ""

    def _error(self, what) -> McpError:
        return McpError(self._describe(what, self.stderr_tail()))

    def _describe(self, what, tail) -> str:
        text = f"MCP server {' '.join(self.argv)!r} {what}"
        return text + (f"\n--- server stderr (tail) ---\n{tail}" if tail else "")


def _ttl_ms(result):
    """A modern list's freshness hint; absent or negative counts as 0 (stale at once)."""
    ttl = result.get("ttlMs")
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        return 0
    return max(0, ttl)


def _tool_text(result) -> tuple:
    """(text, is_error) from a tools/call result: text blocks joined, others noted."""
    if not isinstance(result, dict):
        return "MCP server sent a malformed tools/call result", True
    parts = []
    content = result.get("content")
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
        elif kind == "resource" and isinstance(block.get("resource"), dict) \
                and isinstance(block["resource"].get("text"), str):
            parts.append(block["resource"]["text"])
        elif kind == "resource_link":
            parts.append(f"[resource link: {block.get('uri', '?')}]")
        else:
            parts.append(_NON_TEXT.get(kind, f"[{kind or 'unknown'} content omitted]"))
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return "\n".join(parts), result.get("isError") is True
