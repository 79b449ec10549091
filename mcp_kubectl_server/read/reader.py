"""The server's one read path: HTTP/1.1 GET over the kubectl proxy's unix socket, JSON parsed here.

    handler ── reader.get_json("/api/v1/namespaces/prod/pods/x") ──> GET on a kept-alive
            <── dict, or ReadError("one line saying what to do next") ── connection to proxy.py

`Reader(kubectl, context=, kubeconfig=, timeout=, namespaces=)` owns the proxy child and the
connection; `for_call(cancelled=)` gives a view whose reads together end within `timeout` (a
tool call may read several times) and stop when the call is cancelled: `interrupt()`, called
from another thread, shuts the socket so a blocked read returns at once. A read that fails on
the connection is tried again: on a new connection when a kept-alive one went stale, and once
after starting the proxy again (the proxy is not serving when a new connection fails). Only GET
is ever sent: there is no other method in this module. No Secret path is read, except through
`get_secret()` when the server runs with --read-tls-certificates (`read_tls`; read/tls.py is its
one caller). The connection class is in unixhttp.py.
"""

import copy
import json
import re
import socket
import threading
import time
from urllib.parse import quote, urlencode

from mcp_kubectl_server.read.errors import CancelledError, ReadError, http_error_text, redacted_line
from mcp_kubectl_server.read.proxy import Proxy, ProxyError

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
LIST_PAGE = 500
LINE_BYTES = 64 * 1024  # stream_blocks cuts a longer line there
BLOCK_BYTES = 256 * 1024  # stream_blocks reads this much at a time
_PATH = re.compile(r"(/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)+/?")
# A Prometheus endpoint behind a service proxy (read/prometheus.py builds these; proxy.py opens them)
_SERVICE_PATH = re.compile(r"/api/v1/namespaces/[a-z0-9-]+/services/[a-z0-9-]+:[a-z0-9-]+/proxy/api/v1/"
                           r"(query|query_range|series|labels|label/[a-zA-Z_][a-zA-Z0-9_]*/values|metadata)")
_SECRETS = re.compile(r"^/api/v1/(namespaces/[^/]+/)?secrets(/|$)")
SECRET_MAX_BYTES = 1024 * 1024  # the API server's own limit for a Secret's data


def resource_path(prefix, resource, *, namespace=None, name=None, subresource=None):
    """An API path: resource_path("/apis/apps/v1", "deployments", namespace="prod", name="web")."""
    parts = [prefix.rstrip("/")]
    if namespace:
        parts += ["namespaces", quote(namespace, safe="")]
    parts.append(resource)
    if name:
        parts.append(quote(name, safe=""))
    if subresource:
        parts.append(subresource)
    return "/".join(parts)


class _Channel:
    """State shared by every view of one Reader: the proxy child and the kept-alive connection."""

    def __init__(self, proxy):
        self.proxy = proxy
        self.conn = None
        self.lock = threading.Lock()  # guards conn against interrupt() from another thread

    def open(self, timeout, cancelled=None):
        """(connection, reused): the kept-alive connection, or a new one to a running proxy."""
        from mcp_kubectl_server.read.unixhttp import UnixHTTPConnection  # here: the proxy starts meanwhile (see unixhttp)
        path = self.proxy.ensure(cancelled)
        with self.lock:
            reused = (self.conn is not None and self.conn.sock is not None
                      and self.conn.socket_path == path)
            if not reused:
                self.drop_locked()
                self.conn = UnixHTTPConnection(path, timeout=timeout)
                self.conn.connect()
            self.conn.sock.settimeout(timeout)
            return self.conn, reused

    def drop_locked(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def drop(self):
        with self.lock:
            self.drop_locked()

    def interrupt(self):
        self.proxy.wake()  # a read still waiting for the proxy to start
        with self.lock:
            if self.conn is not None and self.conn.sock is not None:
                try:
                    self.conn.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


class Reader:
    """GET-only reads through one kubectl proxy; errors are ReadError with a one-line text."""

    def __init__(self, kubectl="kubectl", *, context=None, kubeconfig=None, timeout=20.0,
                 namespaces=(), cluster_scoped=True, prometheus=None, read_tls=False, env=None):
        self.timeout = timeout
        self.prometheus = prometheus  # read.prometheus client, or None: no metrics tools
        self.namespaces = tuple(namespaces)
        self.cluster_scoped = cluster_scoped  # False: no node or other cluster-wide path is open
        self.read_tls = read_tls  # True: get_secret() may read one Secret (read/tls.py)
        self._channel = _Channel(Proxy(kubectl, context=context, kubeconfig=kubeconfig,
                                       namespaces=self.namespaces, cluster_scoped=cluster_scoped,
                                       service=getattr(prometheus, "service", None),
                                       read_tls=read_tls, env=env,
                                       start_timeout=max(timeout, 1.0)))
        self._deadline = None
        self._cancelled = None
        self.cache = {}  # shared by every per-call view: read/discovery.py keeps its answer here

    @property
    def proxy(self):
        return self._channel.proxy

    def for_call(self, cancelled=None):
        """A view for one tool call: its reads together end within `timeout`; `cancelled()` stops them."""
        view = copy.copy(self)
        view._deadline = time.monotonic() + self.timeout
        view._cancelled = cancelled
        return view

    def allow_custom(self, kinds):
        """Let the proxy read these custom kinds (read/discovery.py ApiKinds) from now on."""
        if self._channel.proxy.allow_custom(kinds):
            self._channel.drop()  # the child that served the kept-alive connection is gone

    def prepare(self):
        """Launch the proxy now, without waiting (a client connected: its first read is near)."""
        self._channel.proxy.prepare()

    def interrupt(self):
        """From another thread: make a read in progress return now (it then checks `cancelled`)."""
        self._channel.interrupt()

    def close(self):
        """Close the connection and stop the proxy (its whole process group)."""
        self._channel.drop()
        self._channel.proxy.stop()

    def get_json(self, path, query=None):
        """One GET -> the parsed JSON object."""
        return _parse_json(self._get(path, query, max_bytes=DEFAULT_MAX_BYTES), path)

    def list_json(self, path, query=None, *, limit=LIST_PAGE, item=None):
        """A list read page by page (limit/continue) -> {"kind", "apiVersion", "metadata", "items"}.

        `item(obj)`, when given, maps each object as its page arrives to what is kept (None: drop
        it), so a huge namespace is held only as much as its digest needs."""
        query, items, doc = dict(query or {}), [], {}
        while True:
            query["limit"] = limit
            doc = _parse_json(self._get(path, query, max_bytes=DEFAULT_MAX_BYTES), path)
            page = doc.pop("items", None) or []  # the page's bytes are gone by now
            if item is not None:
                page = [kept for kept in map(item, page) if kept is not None]
            items.extend(page)
            token = (doc.get("metadata") or {}).get("continue")
            if not token:
                break
            query["continue"] = token
        (doc.get("metadata") or {}).pop("continue", None)
        return dict(doc, items=items)

    def get_text(self, path, query=None, *, max_bytes=DEFAULT_MAX_BYTES):
        """One GET of a text body (logs: pass tailLines/limitBytes so the server cuts it)."""
        return self._get(path, query, max_bytes=max_bytes).decode("utf-8", "replace")

    def stream_lines(self, path, query=None, *, max_bytes, line_bytes=LINE_BYTES):
        """stream_blocks, line by line (str, newline dropped)."""
        for block in self.stream_blocks(path, query, max_bytes=max_bytes, line_bytes=line_bytes):
            for line in block.split("\n"):
                yield line[:line_bytes]

    def stream_blocks(self, path, query=None, *, max_bytes, line_bytes=LINE_BYTES):
        """One GET of a text body, yielded as it arrives in blocks of whole lines (str, the lines
        joined by newlines, none at the end; a line past `line_bytes` cut there), never held
        whole: a caller that looks at every line in Python reads it line by line, one that can
        first search a block in C skips most lines. A line with no end within `line_bytes` is
        cut there (a longer one that does end inside a block is left to the caller to cut). Leaving the loop early drops the connection
        (the rest of the body is still on the wire). Raises ReadError as get_text does: for a
        body longer than `max_bytes` (pass limitBytes below it), a stream that breaks, or one
        that runs past the call's time."""
        import http.client   # loaded by the first read already (unixhttp): not before the proxy's launch
        response = self._get(path, query, max_bytes=max_bytes, stream=True)
        read, pending, skipping, finished = 0, b"", False, False
        try:
            while True:
                self._check_cancelled()
                self._remaining()  # a read past the call's time stops here
                chunk = response.read1(BLOCK_BYTES)
                if not chunk:
                    response.read()  # closes the response, so the connection can carry the next
                    finished = True
                    break
                read += len(chunk)
                if read > max_bytes:
                    raise ReadError(f"the response passed the {max_bytes} byte cap and was stopped:"
                                    " narrow the query (a smaller tail, a shorter window)")
                if skipping:  # the rest of an overlong line
                    cut = chunk.find(b"\n")
                    if cut < 0:
                        continue
                    chunk, skipping = chunk[cut + 1:], False
                data = pending + chunk
                cut = data.rfind(b"\n")
                pending = data[cut + 1:]
                if len(pending) > line_bytes:  # no end in sight: keep its start, drop the rest
                    data, pending, skipping, cut = data[:cut + 1] + pending[:line_bytes] + b"\n", b"", True, None
                if cut is None or cut >= 0:
                    yield _block_text(data[:-1] if cut is None else data[:cut])
            if pending:
                yield _block_text(pending)
        except (OSError, http.client.HTTPException) as exc:
            self._channel.drop()
            self._check_cancelled()
            if isinstance(exc, TimeoutError):
                raise ReadError(_timeout_text(self.timeout)) from None
            raise ReadError(f"the log stream broke off ({type(exc).__name__}); try again or narrow"
                            " the window") from None
        finally:
            if not finished or response.will_close or not response.isclosed():
                self._channel.drop()

    def get_service(self, path, query, *, max_bytes):
        """One GET of a Prometheus endpoint behind the service proxy (`query` already encoded) ->
        (status, content type, body) whatever the status: its caller reads Prometheus' errors."""
        if not _SERVICE_PATH.fullmatch(path):
            raise ValueError(f"not a Prometheus path behind a service proxy: {path!r}")
        return self._get(path + ("?" + query if query else ""), None, max_bytes=max_bytes, raw=True)

    def remaining(self):
        """Seconds left of this view's time (the whole timeout outside a call)."""
        return self._remaining()

    def get_secret(self, path):
        """One Secret, for read/tls.py alone, which keeps its certificate and drops the rest.
        ValueError unless the server runs with --read-tls-certificates and `path` names one
        Secret in an allowed namespace."""
        parts = path.split("/")
        if not (self.read_tls and len(parts) == 7 and parts[:4] == ["", "api", "v1", "namespaces"]
                and parts[4] in self.namespaces and parts[5] == "secrets"):
            raise ValueError(f"this server does not read Secrets: {path!r}")
        return _parse_json(self._get(path, None, max_bytes=SECRET_MAX_BYTES, secret=True), path)

    def _get(self, path, query, *, max_bytes, raw=False, secret=False, stream=False):
        if not raw and not _PATH.fullmatch(path):
            raise ValueError(f"not an API path: {path!r}")
        if _SECRETS.match(path) and not secret:  # the one way in is get_secret()
            raise ValueError(f"this server does not read Secrets: {path!r}")
        target = path + ("?" + urlencode(query) if query else "")
        from mcp_kubectl_server.read.unixhttp import CONNECTION_ERRORS
        stale_retried = restarted = False
        while True:
            self._check_cancelled()
            reused = False
            try:
                conn, reused = self._channel.open(self._remaining(), self._cancelled)
                self._check_cancelled()  # after open: an interrupt() from now on shuts this socket
                conn.request("GET", target, headers={"Accept": "application/json, */*"})
                response = conn.getresponse()
                if stream and response.status == 200:
                    return response  # stream_lines reads the body
                body = _read_up_to(response, max_bytes + 1)
            except ProxyError as exc:
                raise ReadError(str(exc)) from None
            except CONNECTION_ERRORS as exc:
                self._channel.drop()
                self._check_cancelled()
                if isinstance(exc, TimeoutError) or self._remaining() <= 0.001:
                    raise ReadError(_timeout_text(self.timeout)) from None
                if reused and not stale_retried and self.proxy.alive():
                    stale_retried = True  # the proxy closed an idle connection: a new one
                elif not restarted:
                    restarted = True  # a new connection failed: the proxy is not serving
                    try:
                        self.proxy.restart()
                    except ProxyError as failed:
                        raise ReadError(str(failed)) from None
                else:
                    raise ReadError(self._connection_text(exc)) from None
                continue
            if response.will_close or len(body) > max_bytes:
                self._channel.drop()  # over the cap, the rest of the body is still on the wire
            if len(body) > max_bytes:
                raise ReadError(f"the response passed the {max_bytes} byte cap and was stopped: narrow"
                                " the query (a label selector, a name, a smaller tail)")
            if raw:
                return response.status, response.getheader("Content-Type", ""), body
            if response.status != 200:
                raise ReadError(http_error_text(response.status, response.getheader("Content-Type", ""),
                                                body, path=path, namespaces=self.namespaces),
                                status=response.status)
            return body

    def _remaining(self):
        deadline = self._deadline or time.monotonic() + self.timeout
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ReadError(_timeout_text(self.timeout))
        return remaining

    def _check_cancelled(self):
        if self._cancelled is not None and self._cancelled():
            self._channel.drop()
            raise CancelledError()

    def _connection_text(self, exc):
        proxy = self.proxy
        code = proxy.settle()
        tail = proxy.stderr_tail() or "it wrote nothing on stderr"
        if code is not None:
            return (f"the kubectl proxy exited (code {code}) and exited again after one restart: {tail};"
                    " the operator should check kubectl and the cluster connection")
        return (f"the kubectl proxy stopped answering, also after one restart ({type(exc).__name__}:"
                f" {exc}); its stderr: {tail}; try again later")


def _block_text(data):
    """Bytes of whole lines -> text, carriage returns before newlines dropped."""
    text = data.decode("utf-8", "replace")
    if "\r" not in text:
        return text
    text = text.replace("\r\n", "\n")
    return text[:-1] if text.endswith("\r") else text  # the block's last newline is cut off already


def _read_up_to(response, limit):
    """The body, or its first `limit` bytes; one growing buffer (json.loads takes a bytearray)."""
    body = bytearray()
    while len(body) < limit:
        chunk = response.read(min(256 * 1024, limit - len(body)))
        if not chunk:
            break
        body += chunk
    return body


def _parse_json(body, path):
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        raise ReadError(f"the API server answered {path} with a body that is not JSON: "
                        + redacted_line(body[:4096].decode("utf-8", "replace"), 200)) from None
    if not isinstance(doc, dict):
        raise ReadError(f"the API server answered {path} with JSON that is not an object")
    return doc


def _timeout_text(timeout):
    return (f"the cluster did not answer within {timeout:g}s and the read was stopped: the cluster is"
            " slow or unreachable; try again later or narrow the query")
