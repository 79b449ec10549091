"""The Prometheus client against real local HTTP servers: every way it fails says what to check.

Down (a closed port), slow (a handler that never answers within the timeout), 401 and 403, not
Prometheus (a login page, JSON without the envelope), Prometheus' own errors, the byte cap, the
bearer token (sent, re-read from its file, never passed to a redirect's host), GET only.
"""

import json
import shutil
import socket
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fixtures.http_thread import ServerThread
from mcp_kubectl_server.read.prometheus import (DirectPrometheus, PrometheusError, ServicePrometheus,
                                                parse_service, service_prefix)

SUCCESS = {"status": "success", "data": {"resultType": "vector", "result": []}}
BUILDINFO = json.dumps({"status": "success", "data": {"version": "2.42.0", "revision": "x"}}).encode()


class Scripted(BaseHTTPRequestHandler):
    """Answers with the server's `script(handler) -> (status, content_type, body bytes)`."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.server.prometheus and self.path == "/api/v1/status/buildinfo":
            status, content_type, body = 200, "application/json", BUILDINFO
        else:
            self.server.seen.append((self.command, self.path, dict(self.headers)))
            status, content_type, body = self.server.script(self)
        if status is None:
            return
        self.send_response(status)
        if status in (301, 302):
            self.send_header("Location", body.decode())
            body = b""
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET


@pytest.fixture
def serve():
    started = []

    def start(script, *, prometheus=True, wrap=None):
        """A server answering `script`; with `prometheus`, /api/v1/status/buildinfo as Prometheus
        does (the client asks it before its first query), else that too is scripted."""
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
        if wrap is not None:  # https: each accepted connection does the TLS handshake
            httpd.socket = wrap(httpd.socket)
        httpd.daemon_threads = True
        httpd.script, httpd.seen, httpd.prometheus = script, [], prometheus
        started.append(ServerThread(httpd).start())
        return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for serving in started:
        serving.stop()


def answer(status, doc, content_type="application/json"):
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return lambda handler: (status, content_type, body)


def failure(client, endpoint="query", params=None):
    with pytest.raises(PrometheusError) as caught:
        client.api(endpoint, params or {"query": "up"})
    return str(caught.value)


def test_success_returns_the_data_and_sends_a_get_with_the_query(serve):
    httpd, url = serve(answer(200, SUCCESS))
    data = DirectPrometheus(url).api("query_range", {"query": 'up{job="x"}', "step": "60"})
    assert data == SUCCESS["data"]
    method, path, _ = httpd.seen[0]
    assert method == "GET" and path == "/api/v1/query_range?query=up%7Bjob%3D%22x%22%7D&step=60"


def test_repeated_parameters_are_sent_each(serve):
    httpd, url = serve(answer(200, {"status": "success", "data": []}))
    DirectPrometheus(url).api("series", {"match[]": ['{a="1"}', '{b="2"}']})
    assert httpd.seen[0][1].count("match%5B%5D=") == 2


def test_down_says_to_check_the_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed when the block ends: nothing listens there
    text = failure(DirectPrometheus(f"http://127.0.0.1:{port}", timeout=2))
    assert text.startswith(f"cannot reach Prometheus at http://127.0.0.1:{port}")
    assert "--prometheus-url" in text and "refused" in text.lower()


def test_slow_is_stopped_at_the_timeout(serve):
    release = threading.Event()

    def hang(handler):
        release.wait(10)
        return None, "", b""

    _, url = serve(hang, prometheus=False)
    try:
        text = failure(DirectPrometheus(url, timeout=0.3))
    finally:
        release.set()
    assert text == (f"Prometheus at {url} did not answer within 0.3s: it is slow or overloaded; ask for"
                    " fewer series, a shorter range or a larger step, or try again later")


@pytest.mark.parametrize("status, words", [(401, "rejected the credentials (401 Unauthorized)"),
                                           (403, "refused (403 Forbidden)")])
def test_401_and_403_name_the_token_file(serve, status, words):
    _, url = serve(answer(status, b"Unauthorized", "text/plain"), prometheus=False)
    text = failure(DirectPrometheus(url))
    assert words in text and "--prometheus-token-file" in text and "retrying will not help" in text


@pytest.mark.parametrize("status, content_type, body", [
    (200, "text/html", b"<html><title>Grafana</title><form action=login></form></html>"),
    (200, "application/json", b'{"data": {"result": []}}'),
    (404, "text/plain", b"404 page not found"),
    (200, "application/json", b""),
])
def test_not_prometheus_is_said_so(serve, status, content_type, body):
    _, url = serve(lambda handler: (status, content_type, body), prometheus=False)
    text = failure(DirectPrometheus(url))
    assert "not as Prometheus' API does (no JSON status envelope" in text
    assert "not at Grafana, a login page or another service" in text


def test_prometheus_errors_carry_its_message(serve):
    _, url = serve(answer(400, {"status": "error", "errorType": "bad_data",
                                "error": "1:6: parse error: unclosed left parenthesis"}))
    assert failure(DirectPrometheus(url)) == ("Prometheus refused the query (bad_data): 1:6: parse error:"
                                              " unclosed left parenthesis; fix the query")
    _, url = serve(answer(503, {"status": "error", "errorType": "unavailable", "error": "starting"}))
    assert "could not answer (503 unavailable: starting)" in failure(DirectPrometheus(url))


def test_answers_over_the_byte_cap_are_refused(serve):
    big = {"status": "success", "data": {"resultType": "vector", "result": ["x" * 5000]}}
    _, url = serve(answer(200, big))
    assert "passed the 4096 byte cap" in failure(DirectPrometheus(url, max_bytes=4096))


def test_the_token_is_sent_and_reread_but_not_across_a_redirect(serve, tmp_path):
    other, other_url = serve(answer(200, SUCCESS))
    calls = []

    def redirect_second(handler):
        calls.append(1)
        if len(calls) == 2:
            return 302, "text/plain", (other_url + "/api/v1/query?query=up").encode()
        return 200, "application/json", json.dumps(SUCCESS).encode()

    httpd, url = serve(redirect_second)
    token = tmp_path / "token"
    token.write_text("first-token\n")
    client = DirectPrometheus(url, token_file=str(token))
    client.api("query", {"query": "up"})
    token.write_text("rotated-token")
    client.api("query", {"query": "up"})
    assert httpd.seen[0][2]["Authorization"] == "Bearer first-token"
    assert httpd.seen[1][2]["Authorization"] == "Bearer rotated-token"
    assert "Authorization" not in other.seen[0][2]


def test_queries_share_one_kept_alive_connection(serve):
    peers = []

    def note_peer(handler):
        peers.append(handler.client_address)
        return 200, "application/json", json.dumps(SUCCESS).encode()

    _, url = serve(note_peer)
    client = DirectPrometheus(url)
    for _ in range(3):
        assert client.api("query", {"query": "up"}) == SUCCESS["data"]
    assert len(peers) == 3 and len(set(peers)) == 1


def test_a_kept_connection_that_prometheus_closed_is_opened_again_once(serve):
    peers = []

    def hang_up_after(handler):
        peers.append(handler.client_address)
        handler.close_connection = True  # closes after answering, without saying so
        return 200, "application/json", json.dumps(SUCCESS).encode()

    _, url = serve(hang_up_after)
    client = DirectPrometheus(url)
    assert client.api("query", {"query": "up"}) == SUCCESS["data"]   # over buildinfo's connection
    assert client.api("query", {"query": "up"}) == SUCCESS["data"]   # that one is gone: a new one
    assert len(peers) == 2 and len(set(peers)) == 2


def test_a_proxy_the_environment_names_is_used(serve, monkeypatch):
    _, url = serve(answer(200, SUCCESS))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # a proxy that is down
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{port}")
    text = failure(DirectPrometheus(url, timeout=2))   # Prometheus answers, the proxy does not
    assert text.startswith(f"cannot reach Prometheus at {url}") and "refused" in text.lower()


@pytest.fixture
def tls_serve(serve, tmp_path):
    """serve() over https: a certificate for 127.0.0.1 made by openssl, which is also the CA."""
    if not shutil.which("openssl"):
        pytest.fail("openssl is needed by this test (Debian's openssl package)", pytrace=False)
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True, timeout=60)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    def start(script):
        httpd, url = serve(script, wrap=lambda sock: context.wrap_socket(sock, server_side=True))
        return httpd, url.replace("http://", "https://"), str(cert)
    return start


def test_https_queries_share_one_connection_and_need_the_ca(tls_serve):
    peers = []

    def note_peer(handler):
        peers.append(handler.client_address)
        return 200, "application/json", json.dumps(SUCCESS).encode()

    _, url, ca = tls_serve(note_peer)
    client = DirectPrometheus(url, ca_file=ca)
    for _ in range(3):
        assert client.api("query", {"query": "up"}) == SUCCESS["data"]
    assert len(peers) == 3 and len(set(peers)) == 1
    text = failure(DirectPrometheus(url, timeout=5))   # the system's CAs do not know this one
    assert text.startswith(f"TLS with Prometheus at {url} failed") and "--prometheus-ca" in text


def test_an_unreadable_token_file_is_an_error(tmp_path):
    client = DirectPrometheus("http://127.0.0.1:9", token_file=str(tmp_path / "missing"))
    assert "cannot read --prometheus-token-file" in failure(client)


def test_only_the_query_endpoints_can_be_asked_for():
    client = DirectPrometheus("http://127.0.0.1:9")
    for endpoint in ("admin/tsdb/delete_series", "query/../admin", "label/a b/values", "../metrics", ""):
        with pytest.raises(ValueError):
            client.api(endpoint, {})


def test_buildinfo_is_asked_once_and_names_the_version(serve):
    httpd, url = serve(answer(200, SUCCESS))
    client = DirectPrometheus(url)
    assert client.describe() == f"Prometheus at {url}"
    client.api("query", {"query": "up"})
    client.api("query", {"query": "up"})
    assert client.describe() == f"Prometheus 2.42.0 at {url}" and len(httpd.seen) == 2


def test_a_success_envelope_without_build_information_is_not_prometheus(serve):
    _, url = serve(answer(200, {"status": "success", "data": []}), prometheus=False)
    assert failure(DirectPrometheus(url)) == (f"Prometheus at {url} has no build information: it is"
                                              " not Prometheus")


@pytest.mark.parametrize("url", ["prometheus:9090", "ftp://x", "http://", "http://x/?q=1", ""])
def test_bad_urls_are_refused(url):
    with pytest.raises(ValueError):
        DirectPrometheus(url)


def test_service_values_are_namespace_name_port():
    assert parse_service("monitoring/prometheus-k8s:9090") == ("monitoring", "prometheus-k8s", "9090")
    assert parse_service("monitoring/prometheus:web") == ("monitoring", "prometheus", "web")
    assert service_prefix("m/p:9090") == "/api/v1/namespaces/m/services/p:9090/proxy"
    for bad in ("prometheus:9090", "m/p", "m/p:", "M/p:1", "m/p:1/x", "m/../p:1", "m/p:1 "):
        with pytest.raises(ValueError):
            parse_service(bad)


class FakeView:
    """A reader view's get_service, answering as the API server's service proxy would."""

    def __init__(self, status, content_type, body):
        self.answer, self.asked = (status, content_type, body), []

    def get_service(self, path, query, *, max_bytes):
        self.asked.append((path, query))
        return self.answer


@pytest.mark.parametrize("status, content_type, body, words", [
    (403, "text/plain", b"Forbidden", "the read-only kubectl proxy refused the path"),
    (403, "application/json", b'{"kind":"Status","message":"services \\"prometheus\\" is forbidden"}',
     "need get on services/proxy for prometheus in monitoring"),
    (404, "application/json", b'{"kind":"Status","message":"services \\"prometheus\\" not found"}',
     "check --prometheus-service (`kubectl get service prometheus -n monitoring`"),
    (503, "application/json", b'{"kind":"Status","message":"no endpoints available for service"}',
     "its pods are down or not ready, or the port 9090 is wrong"),
])
def test_service_mode_errors_say_what_to_check(status, content_type, body, words):
    view = FakeView(status, content_type, body)
    with pytest.raises(PrometheusError) as caught:
        ServicePrometheus("monitoring/prometheus:9090").api("query", {"query": "up"}, reader=view)
    assert words in str(caught.value)
    assert view.asked == [("/api/v1/namespaces/monitoring/services/prometheus:9090/proxy/api/v1/query",
                           "query=up")]
