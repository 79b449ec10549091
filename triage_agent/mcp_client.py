"""In-house MCP client over stdio: newline-delimited JSON-RPC 2.0 with a child process.

    client                                    server (child process, no shell)
      initialize {protocolVersion: 2025-11-25, capabilities, clientInfo} ->
                                           <- {protocolVersion: V, capabilities, serverInfo}
      notifications/initialized ->            (V must be one of SUPPORTED_VERSIONS)
      tools/list {cursor?} ->              <- {tools, nextCursor?}   (repeated until no cursor)
      tools/call {name, arguments} ->      <- {content: [...], isError}
      notifications/cancelled {requestId} ->  (when a call outlives its timeout)
                                           <- ping / other requests: answered {} / -32601
                                           <- notifications and non-JSON noise: skipped

A reader thread turns stdout lines into a queue, so no read blocks past its deadline; another
drains stderr into a bounded tail that goes into errors. A server that dies is restarted once
(fresh process, fresh handshake); if it will not come back, McpError carries its stderr tail.
"""

import collections
import itertools
import json
import os
import queue
import subprocess
import threading
import time

from triage_agent import __version__

PROTOCOL_VERSION = "2025-11-25"
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
CLIENT_INFO = {"name": "triage-agent", "version": __version__}
# what kubectl under the server needs: its binary, config and discovery cache (KUBECACHEDIR)
ENV_KEEP = ("PATH", "HOME", "KUBECONFIG", "KUBECACHEDIR", "LANG")
STDERR_TAIL_BYTES = 4096
MAX_PAGES = 100
_EOF = object()
_NON_TEXT = {"image": "[image omitted]", "audio": "[audio omitted]"}


class McpError(Exception):
    """The MCP server cannot be used: it did not start, speaks another protocol, or died and a
    restart did not bring it back."""


class _RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(f"MCP error {code}: {message}")


class _Dead(Exception):
    pass


class _Timeout(Exception):
    def __init__(self, request_id):
        super().__init__(request_id)
        self.request_id = request_id


class McpStdioClient:
    """One MCP server child process: `start`, `list`, `call`, `close`; a context manager."""

    def __init__(self, argv, *, env=None, call_timeout=30.0, start_timeout=15.0,
                 max_restarts=1, close_timeout=2.0, cwd=None):
        if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
            raise McpError(f"MCP server command must be a non-empty argv list, got {argv!r}")
        self.argv = list(argv)
        self.env = {k: os.environ[k] for k in ENV_KEEP if k in os.environ}
        self.env.update(env or {})
        self.call_timeout, self.start_timeout = call_timeout, start_timeout
        self.max_restarts, self.close_timeout, self.cwd = max_restarts, close_timeout, cwd
        self.restarts = 0
        self.protocol_version = self.server_info = None
        self._proc = self._stderr_thread = None
        self._closed = False
        self._inbox = queue.Queue()
        self._tail = collections.deque()
        self._ids = itertools.count(1)
        self._lock = threading.RLock()

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self):
        """Spawn the server and complete the handshake; McpError if that fails. A client that
        is already running is left as it is (a second start would orphan the first server)."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return self
            self._spawn()
            try:
                self._handshake()
            except McpError:
                self._stop()
                raise
        return self

    def _spawn(self):
        self._inbox, self._tail = queue.Queue(), collections.deque()
        try:
            self._proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self.env, cwd=self.cwd, start_new_session=True)
        except (OSError, ValueError) as exc:
            raise McpError(f"cannot start MCP server {self.argv[0]!r}: {exc}") from None
        threading.Thread(target=self._read_stdout, args=(self._proc.stdout, self._inbox),
                         daemon=True).start()
        self._stderr_thread = threading.Thread(target=self._read_stderr,
                                               args=(self._proc.stderr, self._tail), daemon=True)
        self._stderr_thread.start()

    def _handshake(self):
        deadline = time.monotonic() + self.start_timeout
        params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                  "clientInfo": CLIENT_INFO}
        try:
            result = self._request("initialize", params, deadline)
        except _Dead:
            raise self._error("exited during the handshake") from None
        except _Timeout:
            raise self._error(f"did not answer initialize within {self.start_timeout:g} s")\
                from None
        except _RpcError as exc:
            raise self._error(f"refused initialize ({exc})") from None
        offered = result.get("protocolVersion") if isinstance(result, dict) else None
        if offered not in SUPPORTED_VERSIONS:
            raise McpError(f"MCP server {self.argv[0]!r} offered protocol version {offered!r};"
                           f" this client offered {PROTOCOL_VERSION} and accepts only"
                           f" {', '.join(SUPPORTED_VERSIONS)}")
        self.protocol_version = offered
        info = result.get("serverInfo")
        self.server_info = info if isinstance(info, dict) else {}
        try:
            self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        except _Dead:
            raise self._error("exited during the handshake") from None

    def close(self):
        """Shut the server down: close its stdin and wait; then terminate and wait; then kill.

        Each wait is `close_timeout` seconds; a well-behaved server exits at end of input, so
        the later steps only hit one that hangs or ignores SIGTERM."""
        with self._lock:
            self._closed = True
            self._stop()

    def _stop(self):
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        for step in (None, proc.terminate, proc.kill):
            try:
                if step is not None:
                    step()
                proc.wait(self.close_timeout)
                break
            except subprocess.TimeoutExpired:
                continue
            except OSError:
                break
        for stream in (proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def _ensure_alive(self):
        """Start, or restart a dead server once (per client); McpError when that fails."""
        if self._closed:
            raise McpError("the MCP client is closed")
        if self._proc is None and self.protocol_version is None:
            self.start()
        elif self._proc is None or self._proc.poll() is not None:
            self._restart("had exited")

    def _exit_code(self):
        try:
            return self._proc.wait(1.0) if self._proc is not None else None
        except subprocess.TimeoutExpired:
            return None

    def _restart(self, why):
        code = self._exit_code()
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

    # --- tools --------------------------------------------------------------------------------

    def list(self) -> list:
        """All tool definitions, following `nextCursor` across pages."""
        with self._lock:
            self._ensure_alive()
            try:
                return self._list_pages()
            except _Dead:
                self._restart("exited during tools/list")
                return self._list_pages()

    def _list_pages(self):
        tools, cursor, seen = [], None, set()
        for _ in range(MAX_PAGES):
            params = {"cursor": cursor} if cursor is not None else {}
            try:
                result = self._request("tools/list", params,
                                       time.monotonic() + self.call_timeout)
            except _RpcError as exc:
                raise self._error(f"refused tools/list ({exc})") from None
            except _Timeout:
                raise self._error(f"did not answer tools/list within {self.call_timeout:g} s")\
                    from None
            page = result.get("tools") if isinstance(result, dict) else None
            if not isinstance(page, list):
                raise self._error("answered tools/list without a tools array")
            tools.extend(t for t in page if isinstance(t, dict) and isinstance(t.get("name"), str))
            cursor = result.get("nextCursor")
            if cursor is None or cursor in seen:
                return tools
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
            except _RpcError as exc:
                return str(exc), True
            except _Timeout as exc:
                self._cancel(exc.request_id)
                return (f"tool call timed out after {self.call_timeout:g} s; the MCP server did"
                        " not answer and the request was cancelled", True)
            except _Dead:
                code = self._exit_code()
                self._restart("exited during a tool call")
                return (f"the MCP server exited during this call (exit code {code}); it was"
                        " restarted, the call did not complete", True)

    def _cancel(self, request_id):
        try:
            self._send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": request_id, "reason": "timed out"}})
        except _Dead:
            pass

    # --- JSON-RPC plumbing --------------------------------------------------------------------

    def _send(self, message):
        proc = self._proc
        if proc is None or proc.poll() is not None:
            raise _Dead()
        line = json.dumps(message).encode("utf-8") + b"\n"  # TypeError/ValueError: caller's
        try:
            proc.stdin.write(line)
            proc.stdin.flush()
        except (OSError, ValueError):
            raise _Dead() from None

    def _request(self, method, params, deadline):
        request_id = next(self._ids)
        self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Timeout(request_id)
            try:
                message = self._inbox.get(timeout=remaining)
            except queue.Empty:
                raise _Timeout(request_id) from None
            if message is _EOF:
                self._inbox.put(_EOF)  # stay dead for whoever asks next
                raise _Dead()
            if "method" in message:
                self._answer_server(message)
            elif message.get("id") == request_id:
                if isinstance(message.get("error"), dict):
                    error = message["error"]
                    raise _RpcError(error.get("code"), error.get("message", "(no message)"))
                return message.get("result")
            # else: a late answer to a request we gave up on; skip it

    def _answer_server(self, message):
        if "id" not in message:
            return  # a notification: logging, progress, list_changed
        if message["method"] == "ping":
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": -32601, "message": f"method not found: {message['method']}"}}
        try:
            self._send(reply)
        except _Dead:
            pass

    @staticmethod
    def _read_stdout(stream, inbox):
        try:
            for line in stream:
                try:
                    data = json.loads(line)
                except ValueError:
                    continue  # noise: banners, stray prints
                for message in data if isinstance(data, list) else [data]:
                    if isinstance(message, dict):
                        inbox.put(message)
        except (OSError, ValueError):
            pass
        inbox.put(_EOF)

    @staticmethod
    def _read_stderr(stream, tail):
        size = 0
        try:
            for chunk in iter(lambda: stream.read1(4096), b""):
                tail.append(chunk)
                size += len(chunk)
                while size > STDERR_TAIL_BYTES and len(tail) > 1:
                    size -= len(tail.popleft())
        except (OSError, ValueError):
            pass

    def stderr_tail(self) -> str:
        """The last few KiB the server wrote to stderr."""
        proc, reader = self._proc, self._stderr_thread
        if reader is not None and (proc is None or proc.poll() is not None):
            reader.join(1.0)  # an exited server's last words may still be in the pipe
        text = b"".join(list(self._tail)).decode("utf-8", "replace")
        return text[-STDERR_TAIL_BYTES:].strip()

    def _error(self, what) -> McpError:
        return McpError(self._describe(what, self.stderr_tail()))

    def _describe(self, what, tail) -> str:
        text = f"MCP server {' '.join(self.argv)!r} {what}"
        return text + (f"\n--- server stderr (tail) ---\n{tail}" if tail else "")


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
