"""The stdlib WebSocket client against a real RFC 6455 server (the `websockets` package), and
against a raw socket server that breaks the protocol in the ways a client must refuse."""

import base64
import hashlib
import socket
import ssl
import struct
import subprocess
import threading

import pytest
from websockets.sync.server import serve

from tests.support.connect_proxy import ConnectProxy
from triage_agent.chat import websocket as ws

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


@pytest.fixture
def wsserver():
    """Start a websockets server whose handler the test gives; yields start(handler, **kw)."""
    servers = []

    def start(handler, **kwargs):
        server = serve(handler, "127.0.0.1", 0, **kwargs)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.socket.getsockname()[1]

    yield start
    for server in servers:
        server.shutdown()


def test_echo_text_both_ways_with_masking_enforced_by_the_server(wsserver):
    seen = []

    def handler(conn):
        for message in conn:  # websockets refuses unmasked client frames (1002)
            seen.append(message)
            conn.send("echo:" + message)

    port = wsserver(handler)
    client = ws.connect(f"ws://127.0.0.1:{port}/link?ticket=1")
    for text in ("hello", "é" * 200, "x" * 70000):  # 7-bit, 16-bit and 64-bit lengths
        client.send_text(text)
        assert client.recv() == "echo:" + text
    client.close()
    assert seen == ["hello", "é" * 200, "x" * 70000]


def test_fragmented_messages_and_pings_between_fragments(wsserver):
    def handler(conn):
        conn.ping(b"are-you-there")
        conn.send(["{\"a\":", " 1, ", "\"b\": 2}"])  # three frames: text, cont, cont
        conn.send([b"\x00\x01", b"\x02"])
        conn.recv()

    client = ws.connect(f"ws://127.0.0.1:{wsserver(handler)}/")
    assert client.recv() == '{"a": 1, "b": 2}'
    assert client.recv() == b"\x00\x01\x02"
    client.send_text("done")
    client.close()


def test_server_close_code_is_kept_and_echoed(wsserver):
    got = {}

    def handler(conn):
        conn.close(4001, "going for a refresh")
        got["code"] = conn.close_code

    client = ws.connect(f"ws://127.0.0.1:{wsserver(handler)}/")
    assert client.recv() is None
    assert client.close_code == 4001


def test_message_over_the_bound_is_refused_with_1009(wsserver):
    result = {}

    def handler(conn):
        try:
            conn.send(["a" * 600, "b" * 600])
            conn.recv()
        except Exception:  # the client's close ends the server's wait
            pass
        result["code"] = conn.close_code

    client = ws.connect(f"ws://127.0.0.1:{wsserver(handler)}/", max_bytes=1000)
    with pytest.raises(ws.WebSocketError) as e:
        client.recv()
    assert e.value.code == 1009


def test_keepalive_ping_answered_by_the_server_keeps_the_link(wsserver):
    release = threading.Event()

    def handler(conn):
        release.wait(5)
        conn.send("late")

    client = ws.connect(f"ws://127.0.0.1:{wsserver(handler)}/", keepalive=0.05)
    threading.Timer(0.3, release.set).start()
    assert client.recv() == "late"  # several keepalive pings went out and were answered
    client.close()


def tls_for_localhost(tmp_path):
    """(server SSLContext, certificate path): a self-signed certificate for localhost, by openssl."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert, key)
    return server_ctx, cert


def test_wss_over_tls_with_the_certificate_checked(wsserver, tmp_path):
    server_ctx, cert = tls_for_localhost(tmp_path)
    port = wsserver(lambda conn: conn.send("over tls"), ssl=server_ctx)
    with pytest.raises(ws.WebSocketError, match="handshake"):
        ws.connect(f"wss://localhost:{port}/")  # not signed by a trusted CA: refused
    trusting = ssl.create_default_context(cafile=str(cert))
    client = ws.connect(f"wss://localhost:{port}/", ssl_context=trusting)
    assert client.recv() == "over tls"
    client.close()


# --- through a proxy that tunnels with CONNECT (HTTP_PROXY / HTTPS_PROXY, NO_PROXY) --------------

PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "all_proxy")


@pytest.fixture
def proxied(monkeypatch):
    """set(**variables): the proxy environment a connection reads, nothing else of the caller's."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return lambda **variables: [monkeypatch.setenv(k, v) for k, v in variables.items()]


def test_ws_goes_through_the_http_proxy_s_tunnel(wsserver, proxied):
    port = wsserver(lambda conn: conn.send("via proxy: " + conn.recv()))
    with ConnectProxy() as proxy:
        proxied(HTTP_PROXY=proxy.url)
        client = ws.connect(f"ws://127.0.0.1:{port}/link")
        client.send_text("hi")
        assert client.recv() == "via proxy: hi"
        client.close()
    assert proxy.tunnels == [(f"127.0.0.1:{port}", None)]


def test_wss_tunnels_with_proxy_credentials_and_tls_inside(wsserver, proxied, tmp_path):
    server_ctx, cert = tls_for_localhost(tmp_path)
    port = wsserver(lambda conn: conn.send("over tls"), ssl=server_ctx)
    basic = "Basic " + base64.b64encode(b"oncall:p@ss word").decode()
    with ConnectProxy(credentials=basic) as proxy:
        proxied(HTTPS_PROXY=proxy.url.replace("http://", "http://oncall:p%40ss%20word@"))
        client = ws.connect(f"wss://localhost:{port}/", ssl_context=ssl.create_default_context(cafile=str(cert)))
        assert client.recv() == "over tls"   # the certificate checked for localhost, through the tunnel
        client.close()
    assert proxy.tunnels == [(f"localhost:{port}", basic)]


def test_a_proxy_that_refuses_and_a_proxy_kind_we_cannot_use_are_clear_errors(wsserver, proxied):
    port = wsserver(lambda conn: conn.send("never"))
    with ConnectProxy(credentials="Basic x") as proxy:
        proxied(HTTP_PROXY=proxy.url)
        with pytest.raises(ws.WebSocketError, match="the proxy refused the tunnel to 127.0.0.1:.*407"):
            ws.connect(f"ws://127.0.0.1:{port}/")
    proxied(HTTP_PROXY="socks5://127.0.0.1:1080")
    with pytest.raises(ws.WebSocketError, match="only an http:// proxy"):
        ws.connect(f"ws://127.0.0.1:{port}/")


def test_no_proxy_names_the_hosts_reached_directly(wsserver, proxied):
    port = wsserver(lambda conn: conn.send("direct"))
    with ConnectProxy() as proxy:
        proxied(HTTP_PROXY=proxy.url, NO_PROXY="127.0.0.1")
        client = ws.connect(f"ws://127.0.0.1:{port}/")
        assert client.recv() == "direct"
        client.close()
    assert proxy.tunnels == []


# a raw server: the handshake done right, then whatever bytes the test gives


def raw_server(frames, *, accept=None, status=b"101 Switching Protocols"):
    listener = socket.create_server(("127.0.0.1", 0))
    received = []

    def run():
        conn, _ = listener.accept()
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                head += conn.recv(4096)
            key = [line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
                   if line.lower().startswith(b"sec-websocket-key:")][0]
            digest = accept or base64.b64encode(hashlib.sha1(key + GUID).digest())
            conn.sendall(b"HTTP/1.1 " + status + b"\r\nUpgrade: websocket\r\n"
                         b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + digest + b"\r\n\r\n")
            conn.sendall(frames)
            conn.settimeout(2)
            try:
                while chunk := conn.recv(4096):
                    received.append(chunk)
            except OSError:
                pass
        listener.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return listener.getsockname()[1], received, thread


def close_code_sent(received):
    """The close code of the (masked) close frame the client sent, from the raw bytes."""
    data = b"".join(received)
    assert data[0] == 0x88 and data[1] & 0x80, data[:2]
    mask = data[2:6]
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(data[6:6 + (data[1] & 0x7F)]))
    return struct.unpack("!H", body[:2])[0]


@pytest.mark.parametrize("frames,code", [
    (b"\x81\x82abcd\x01\x02", 1002),            # a masked frame from the server
    (b"\xc1\x02hi", 1002),                      # RSV1 set, no extension agreed
    (b"\x83\x00", 1002),                        # reserved opcode
    (b"\x80\x02hi", 1002),                      # continuation with nothing to continue
    (b"\x01\x02hi\x81\x02hi", 1002),            # a new message inside a fragmented one
    (b"\x09\x02hi", 1002),                      # a fragmented ping
    (b"\x89\x7e\x00\x80" + b"p" * 128, 1002),   # a ping over 125 bytes
    (b"\x81\x02\xff\xfe", 1007),                # text that is not UTF-8
    (b"\x88\x02\x03\xed", 1002),                # close with the reserved code 1005
    (b"\x81\x7f\x00\x00\x00\x01\x00\x00\x00\x00", 1009),  # a 4 GiB frame announced
])
def test_protocol_breaches_are_refused_with_their_close_code(frames, code):
    port, received, thread = raw_server(frames)
    client = ws.connect(f"ws://127.0.0.1:{port}/")
    with pytest.raises(ws.WebSocketError) as e:
        client.recv()
    assert e.value.code == code
    thread.join(5)
    assert close_code_sent(received) == code


def test_bad_accept_and_non_101_fail_the_handshake():
    port, _, thread = raw_server(b"", accept=b"AAAAAAAAAAAAAAAAAAAAAAAAAAA=")
    with pytest.raises(ws.WebSocketError, match="Sec-WebSocket-Accept"):
        ws.connect(f"ws://127.0.0.1:{port}/")
    thread.join(5)
    port, _, thread = raw_server(b"", status=b"403 Forbidden")
    with pytest.raises(ws.WebSocketError, match="403"):
        ws.connect(f"ws://127.0.0.1:{port}/")
    thread.join(5)


def test_drop_without_close_frame_and_dead_peer_are_errors():
    port, _, thread = raw_server(b"\x81\x05he")  # half a frame, then the socket closes
    client = ws.connect(f"ws://127.0.0.1:{port}/")
    client.sock.shutdown(socket.SHUT_WR)  # let the raw server's read loop end
    with pytest.raises(ws.WebSocketError, match="dropped") as e:
        client.recv()
    assert e.value.code == 1006
    thread.join(5)


def test_refused_connection_and_bad_url_are_clear_errors():
    with pytest.raises(ws.WebSocketError, match="not a ws"):
        ws.connect("http://127.0.0.1:1/")
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    with pytest.raises(ws.WebSocketError, match="cannot connect"):
        ws.connect(f"ws://127.0.0.1:{port}/", timeout=2)


def test_a_peer_that_never_answers_our_ping_is_dead():
    port, received, thread = raw_server(b"")
    client = ws.connect(f"ws://127.0.0.1:{port}/", keepalive=0.05)
    with pytest.raises(ws.WebSocketError, match="no answer to a ping") as e:
        client.recv()
    assert e.value.code == 1011
    thread.join(5)
    assert b"".join(received)[0] == 0x89  # our ping went out first
