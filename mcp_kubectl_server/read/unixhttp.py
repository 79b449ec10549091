"""HTTP/1.1 over a unix socket: the connection class the reader talks to the kubectl proxy with.

Its own module so that `http.client` (with `email` and `ssl` behind it, a third of the server's
import time) is imported at the first read, while the proxy is still starting, not before the
server can answer `initialize`.
"""

import http.client
import socket

# What a failed exchange on the connection raises (a dead proxy, a stale kept-alive connection).
CONNECTION_ERRORS = (OSError, http.client.HTTPException)


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a unix socket; Host stays `localhost`, which the proxy's filter accepts."""

    def __init__(self, socket_path, *, timeout):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock
