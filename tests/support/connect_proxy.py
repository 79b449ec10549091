"""An HTTP proxy that tunnels with CONNECT (as corporate proxies do for TLS), on 127.0.0.1:0:
it records each CONNECT's target and Proxy-Authorization, answers 407 when `credentials` are
set and not given, 403 for a target in `refuse`, else connects and splices both ways."""

import socket
import socketserver
import threading

from fixtures.http_thread import ServerThread


class ConnectProxy:
    def __init__(self, *, credentials=None, refuse=()):
        self.credentials, self.refuse = credentials, set(refuse)
        self.tunnels = []   # (target, Proxy-Authorization or None)
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                owner._handle(self.request)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.serving = ServerThread(self.server, name="connect-proxy").start()
        return self

    def __exit__(self, *exc):
        self.serving.stop()

    def _handle(self, client):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                return
            head += chunk
        lines = head.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
        method, target = lines[0].split(" ")[:2]
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        auth = headers.get("proxy-authorization")
        self.tunnels.append((target, auth))
        if method != "CONNECT":
            return client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")
        if self.credentials and auth != self.credentials:
            return client.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                                  b"Proxy-Authenticate: Basic realm=\"corp\"\r\nContent-Length: 0\r\n\r\n")
        if target in self.refuse:
            return client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
        host, _, port = target.rpartition(":")
        upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        threading.Thread(target=_pipe, args=(upstream, client), daemon=True).start()
        _pipe(client, upstream)


def _pipe(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
