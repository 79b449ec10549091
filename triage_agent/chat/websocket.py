"""A WebSocket client (RFC 6455) in the standard library: what Socket Mode needs, no more.

    GET /path HTTP/1.1 + Upgrade: websocket, Sec-WebSocket-Key (16 random bytes, base64)
    <- 101, Sec-WebSocket-Accept = base64(SHA-1(key + GUID)); no extension, no subprotocol
    frames: FIN|RSV|opcode, MASK|len (7, 16 or 64 bit), client frames masked, server's never

`ws://` over TCP, `wss://` over TLS (the default context: certificates and host names checked).
Through the proxy the environment names (HTTPS_PROXY for wss://, HTTP_PROXY for ws://, as
urllib reads them, NO_PROXY respected): an HTTP CONNECT tunnel (with Basic proxy credentials
when its URL has them), TLS to the server inside it, as the Web API's requests go (urllib).
Text and binary messages may come in fragments; pings are answered with pongs while reading; a
quiet connection gets a ping of ours after `keepalive` seconds and is dead when nothing answers
within another `keepalive`. A message over `max_bytes` is refused with close code 1009, invalid
UTF-8 with 1007, any other breach of the protocol with 1002; each is a `WebSocketError`.
`recv` returns None once the peer has closed (the close is echoed, its code kept in `close_code`).
Sending is thread-safe (a lock), so another thread may acknowledge while one reads.
"""

import base64
import hashlib
import os
import socket
import ssl
import struct
import threading
import urllib.parse
import urllib.request

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
MAX_HEADER_BYTES = 16384
# codes a peer may put in a close frame (RFC 6455 7.4.1, and 3000-4999 for libraries and apps)
VALID_CLOSE = {1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014}


class WebSocketError(Exception):
    """The connection failed or broke the protocol; `code` is the close code sent, if any."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


def connect(url, *, timeout=10.0, keepalive=10.0, max_bytes=1 << 20, ssl_context=None):
    """Open a WebSocket to a ws:// or wss:// URL: the handshake done, or WebSocketError."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise WebSocketError(f"not a ws:// or wss:// URL: {parts.scheme}://…")
    port = parts.port or (443 if parts.scheme == "wss" else 80)
    proxy = proxy_for(parts)
    where = f"{proxy[0]}:{proxy[1]} (the proxy)" if proxy else f"{parts.hostname}:{port}"
    try:
        sock = socket.create_connection(proxy[:2] if proxy else (parts.hostname, port), timeout=timeout)
    except OSError as e:
        raise WebSocketError(f"cannot connect to {where}: {e}") from None
    try:
        if proxy:
            _tunnel(sock, parts.hostname, port, proxy[2])
        if parts.scheme == "wss":
            context = ssl_context or ssl.create_default_context()
            sock = context.wrap_socket(sock, server_hostname=parts.hostname)
        ws = WebSocket(sock, keepalive=keepalive, max_bytes=max_bytes)
        ws.handshake(parts, port)
        return ws
    except (OSError, ssl.SSLError) as e:
        sock.close()
        raise WebSocketError(f"WebSocket handshake with {parts.hostname}:{port} failed: {e}") \
            from None
    except WebSocketError:
        sock.close()
        raise


def proxy_for(parts):
    """(host, port, Proxy-Authorization value or None) of the proxy for a ws(s):// URL's parts,
    or None (no proxy, or NO_PROXY names the host)."""
    url = urllib.request.getproxies().get("https" if parts.scheme == "wss" else "http")
    if not url or urllib.request.proxy_bypass(parts.hostname):
        return None
    proxy = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
    if proxy.scheme != "http" or not proxy.hostname:
        raise WebSocketError(f"proxy {proxy.scheme}://{proxy.hostname or ''}: only an http:// proxy "
                             "(which tunnels with CONNECT) is supported")
    auth = None
    if proxy.username is not None:
        pair = f"{urllib.parse.unquote(proxy.username)}:{urllib.parse.unquote(proxy.password or '')}"
        auth = "Basic " + base64.b64encode(pair.encode()).decode()
    return proxy.hostname, proxy.port or 80, auth


def _tunnel(sock, host, port, auth):
    """CONNECT host:port through the proxy `sock` is connected to; WebSocketError unless 2xx."""
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    request = f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n"
    request += f"Proxy-Authorization: {auth}\r\n" if auth else ""
    sock.sendall((request + "\r\n").encode("ascii"))
    head = b""
    while not head.endswith(b"\r\n\r\n"):   # byte by byte: what follows is the server's
        if len(head) > MAX_HEADER_BYTES:
            raise WebSocketError("the proxy's answer to CONNECT is too long")
        byte = sock.recv(1)
        if not byte:
            raise WebSocketError("the proxy closed the connection instead of answering CONNECT")
        head += byte
    status = head.split(b"\r\n", 1)[0].decode("latin-1")
    fields = status.split(" ", 2)
    if len(fields) < 2 or not fields[0].startswith("HTTP/1.") or not fields[1].startswith("2"):
        raise WebSocketError(f"the proxy refused the tunnel to {target}: {status[:200]}")


class WebSocket:
    """One open connection: `send_text`, `recv`, `close`."""

    def __init__(self, sock, *, keepalive, max_bytes):
        self.sock = sock
        self.keepalive = keepalive
        self.max_bytes = max_bytes
        self.close_code = None
        self._buf = bytearray()
        self._fragments = None  # (opcode, [bytes]) while a fragmented message is coming
        self._send_lock = threading.Lock()
        self._closing = False
        self._ping_out = False

    def handshake(self, parts, port):
        key = base64.b64encode(os.urandom(16)).decode()
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        default = port == (443 if parts.scheme == "wss" else 80)
        host = parts.hostname if default else f"{parts.hostname}:{port}"
        request = (f"GET {target} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                   "Sec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode("ascii"))
        status, headers = self._read_response()
        if status != 101:
            raise WebSocketError(f"the server answered {status} instead of 101 Switching Protocols")
        expected = base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()
        if headers.get("upgrade", "").lower() != "websocket" or \
                "upgrade" not in headers.get("connection", "").lower():
            raise WebSocketError("the server's 101 lacks Upgrade: websocket / Connection: Upgrade")
        if headers.get("sec-websocket-accept") != expected:
            raise WebSocketError("the server's Sec-WebSocket-Accept does not match our key")
        if headers.get("sec-websocket-extensions") or headers.get("sec-websocket-protocol"):
            raise WebSocketError("the server chose an extension or subprotocol we did not offer")
        self.sock.settimeout(self.keepalive)

    def _read_response(self):
        while b"\r\n\r\n" not in self._buf:
            if len(self._buf) > MAX_HEADER_BYTES:
                raise WebSocketError("the server's handshake response is too long")
            chunk = self.sock.recv(4096)
            if not chunk:
                raise WebSocketError("the server closed the connection during the handshake")
            self._buf += chunk
        head, _, rest = bytes(self._buf).partition(b"\r\n\r\n")
        self._buf = bytearray(rest)
        lines = head.decode("latin-1").split("\r\n")
        fields = lines[0].split(" ", 2)
        if len(fields) < 2 or not fields[0].startswith("HTTP/1.") or not fields[1].isdigit():
            raise WebSocketError("the server's handshake response is not HTTP/1.1")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(fields[1]), headers

    # sending

    def send_text(self, text):
        """Send one text message (one frame, masked)."""
        self._send(TEXT, text.encode("utf-8"))

    def ping(self, data=b""):
        self._send(PING, data)

    def _send(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 1 << 16:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        with self._send_lock:
            if self._closing and opcode != CLOSE:
                raise WebSocketError("the connection is closing")
            try:
                self.sock.sendall(head + mask + _masked(payload, mask))
            except OSError as e:
                raise WebSocketError(f"send failed: {e}") from None

    def close(self, code=1000, reason=""):
        """Send a close frame (once) and end the connection; never raises."""
        with self._send_lock:
            already, self._closing = self._closing, True
        if not already:
            try:
                self._send(CLOSE, struct.pack("!H", code) + reason.encode("utf-8")[:123])
            except WebSocketError:
                pass
        try:
            self.sock.close()
        except OSError:
            pass

    def _fail(self, code, message):
        self.close(code, message[:100])
        raise WebSocketError(message, code)

    # receiving

    def recv(self):
        """The next message (str for text, bytes for binary), or None once the peer has closed."""
        while True:
            frame = self._next_frame()
            if frame is None:
                return None
            fin, opcode, payload = frame
            if opcode >= CLOSE:
                if self._control(opcode, payload):
                    return None
                continue
            message = self._assemble(fin, opcode, payload)
            if message is not None:
                return message

    def _control(self, opcode, payload):
        if opcode == PING:
            self._send(PONG, payload)
        elif opcode == CLOSE:
            code = 1005
            if len(payload) == 1:
                self._fail(1002, "a close frame with a one-byte body")
            if len(payload) >= 2:
                code = struct.unpack("!H", payload[:2])[0]
                if code not in VALID_CLOSE and not 3000 <= code <= 4999:
                    self._fail(1002, f"a close frame with the invalid code {code}")
                try:
                    payload[2:].decode("utf-8")
                except UnicodeDecodeError:
                    self._fail(1007, "a close reason that is not UTF-8")
            self.close_code = code
            self.close(1000 if code == 1005 else code)
            return True
        return False

    def _assemble(self, fin, opcode, payload):
        if opcode == CONT:
            if self._fragments is None:
                self._fail(1002, "a continuation frame with no message to continue")
            self._fragments[1].append(payload)
        elif self._fragments is not None:
            self._fail(1002, "a new message before the fragmented one ended")
        else:
            self._fragments = (opcode, [payload])
        kind, parts = self._fragments
        if sum(map(len, parts)) > self.max_bytes:
            self._fail(1009, f"a message over {self.max_bytes} bytes")
        if not fin:
            return None
        self._fragments = None
        data = b"".join(parts)
        if kind == BINARY:
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            self._fail(1007, "a text message that is not UTF-8")

    def _next_frame(self):
        """(fin, opcode, payload) of one whole frame; the buffer keeps a partial one."""
        while True:
            frame = self._parse()
            if frame is not None:
                return frame
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                if self._ping_out:
                    self._fail(1011, f"no answer to a ping within {self.keepalive:g}s")
                self._ping_out = True
                self.ping(b"keepalive")
                continue
            except OSError as e:
                raise WebSocketError(f"the connection broke: {e}") from None
            if not chunk:
                if self._closing:
                    return None
                raise WebSocketError("the connection dropped without a close frame", 1006)
            self._ping_out = False
            self._buf += chunk

    def _parse(self):
        buf = self._buf
        if len(buf) < 2:
            return None
        b0, b1 = buf[0], buf[1]
        fin, rsv, opcode = b0 & 0x80, b0 & 0x70, b0 & 0x0F
        if rsv:
            self._fail(1002, "a frame with reserved bits set (no extension was agreed)")
        if opcode not in (CONT, TEXT, BINARY, CLOSE, PING, PONG):
            self._fail(1002, f"a frame with the unknown opcode {opcode:#x}")
        if b1 & 0x80:
            self._fail(1002, "a masked frame from the server")
        n, at = b1 & 0x7F, 2
        if opcode >= CLOSE and (not fin or n > 125):
            self._fail(1002, "a control frame fragmented or over 125 bytes")
        if n == 126:
            if len(buf) < 4:
                return None
            n, at = struct.unpack("!H", buf[2:4])[0], 4
        elif n == 127:
            if len(buf) < 10:
                return None
            n, at = struct.unpack("!Q", buf[2:10])[0], 10
            if n >> 63:
                self._fail(1002, "a frame length with the most significant bit set")
        if n > self.max_bytes:
            self._fail(1009, f"a frame over {self.max_bytes} bytes")
        if len(buf) < at + n:
            return None
        payload = bytes(buf[at:at + n])
        del buf[:at + n]
        return bool(fin), opcode, payload


def _masked(payload, mask):
    if not payload:
        return b""
    # XOR as one big integer: far faster than a byte loop in pure Python
    n = len(payload)
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")
