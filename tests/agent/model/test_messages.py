"""The raw-HTTP Messages client against a real local HTTP server, scripted per request."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fixtures.http_thread import ServerThread
from triage_agent.model.messages import API_VERSION, FALLBACK_BETA, ApiError, MessagesClient

MESSAGE = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
           "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 3, "output_tokens": 1}}
REQUEST = {"model": "claude-opus-5-5", "max_tokens": 16,
           "messages": [{"role": "user", "content": "héllo"}]}


def ok(body=MESSAGE, headers=None):
    return {"status": 200, "body": body, "headers": {"request-id": "req_ok", **(headers or {})}}


def error(status, kind, message="boom", headers=None, request_id="req_err"):
    return {"status": status, "headers": {"request-id": request_id, **(headers or {})},
            "body": {"type": "error", "error": {"type": kind, "message": message},
                     "request_id": request_id}}


class ScriptedApi:
    """A local server answering each POST with the next scripted action.

    Actions: a dict {status, headers, body}; "drop" (close without answering); "partial"
    (promise 1000 bytes, send 10, close); "hang" (answer nothing until the test ends)."""

    def __init__(self, script):
        self.script = list(script)
        self.requests = []
        self.release = threading.Event()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                api.requests.append({"path": self.path, "headers": dict(self.headers),
                                     "body": self.rfile.read(length)})
                api.act(self, api.script.pop(0) if api.script else ok())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.serving = ServerThread(self.server, name="test-messages-api").start()

    def act(self, handler, action):
        if action == "drop":
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        if action == "hang":
            self.release.wait(10)
            return
        if action == "partial":
            handler.send_response(200)
            handler.send_header("content-length", "1000")
            handler.end_headers()
            handler.wfile.write(b'{"type": "m')
            handler.wfile.flush()
            handler.close_connection = True
            handler.connection.shutdown(2)
            return
        body = action["body"]
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        handler.send_response(action["status"])
        for name, value in action.get("headers", {}).items():
            handler.send_header(name, value)
        handler.send_header("content-length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)

    def close(self):
        self.release.set()
        self.serving.stop()


@pytest.fixture
def api():
    servers = []

    def start(*script):
        server = ScriptedApi(script)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def client_for(server, **options):
    sleeps = []
    options.setdefault("timeout", 5)
    client = MessagesClient(api_key="sk-test", base_url=server.url, sleep=sleeps.append,
                            rand=lambda: 0.0, **options)
    return client, sleeps


def test_headers_and_body_arrive_as_sent(api):
    server = api(ok())
    client, sleeps = client_for(server)
    assert client(REQUEST) == MESSAGE
    (sent,) = server.requests
    headers = {k.lower(): v for k, v in sent["headers"].items()}
    assert sent["path"] == "/v1/messages"
    assert headers["x-api-key"] == "sk-test"
    assert headers["anthropic-version"] == API_VERSION == "2026-10-21"
    assert headers["content-type"] == "application/json"
    assert headers["anthropic-beta"] == FALLBACK_BETA
    assert json.loads(sent["body"]) == REQUEST
    assert sleeps == [] and client.last_request_id == "req_ok"


def test_no_beta_header_without_fallbacks(api):
    server = api(ok())
    client, _ = client_for(server, fallbacks=False)
    client(REQUEST)
    assert "anthropic-beta" not in {k.lower() for k in server.requests[0]["headers"]}


def test_base_url_with_trailing_slash(api):
    server = api(ok())
    client = MessagesClient(api_key="k", base_url=server.url + "/", sleep=lambda s: None)
    client(REQUEST)
    assert server.requests[0]["path"] == "/v1/messages"


def test_429_honours_retry_after_seconds(api):
    server = api(error(429, "rate_limit_error", headers={"retry-after": "7"}), ok())
    client, sleeps = client_for(server)
    assert client(REQUEST) == MESSAGE
    assert sleeps == [7.0] and len(server.requests) == 2


def test_retry_after_ms_wins_and_long_waits_fall_back_to_backoff(api):
    server = api(error(429, "rate_limit_error", headers={"retry-after-ms": "1500",
                                                         "retry-after": "9"}),
                 error(429, "rate_limit_error", headers={"retry-after": "3600"}), ok())
    client, sleeps = client_for(server)
    client(REQUEST)
    assert sleeps == [1.5, 1.0]  # 3600 s is past the 60 s cap: backoff 0.5 * 2 instead


def test_529_and_500_back_off_exponentially_with_jitter(api):
    server = api(error(529, "overloaded_error"), error(500, "api_error"), ok())
    sleeps = []
    client = MessagesClient(api_key="k", base_url=server.url, sleep=sleeps.append,
                            rand=lambda: 1.0)
    assert client(REQUEST) == MESSAGE
    assert sleeps == [0.375, 0.75]  # 0.5 and 1.0, each less 25 % jitter
    assert client.retries == 2


def test_backoff_is_capped_at_8_seconds(api):
    server = api(*[error(503, "api_error")] * 6, ok())
    client, sleeps = client_for(server, max_retries=6)
    client(REQUEST)
    assert sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


def test_dropped_connection_and_incomplete_read_are_retried(api):
    server = api("drop", "partial", ok())
    client, sleeps = client_for(server)
    assert client(REQUEST) == MESSAGE
    assert len(server.requests) == 3 and len(sleeps) == 2


def test_connection_refused_is_retried_then_fails(api):
    server = api()
    url = server.url
    server.close()
    sleeps = []
    client = MessagesClient(api_key="k", base_url=url, sleep=sleeps.append, rand=lambda: 0)
    with pytest.raises(ApiError) as caught:
        client(REQUEST)
    assert caught.value.status is None and caught.value.error_type == "connection_error"
    assert sleeps == [0.5, 1.0]


def test_still_failing_after_retries_raises_the_last_error(api):
    server = api(*[error(529, "overloaded_error", request_id=f"req_{i}") for i in range(3)])
    client, sleeps = client_for(server)
    with pytest.raises(ApiError) as caught:
        client(REQUEST)
    assert (caught.value.status, caught.value.error_type) == (529, "overloaded_error")
    assert caught.value.request_id == "req_2" and len(server.requests) == 3


def test_x_should_retry_false_stops_a_500(api):
    server = api(error(500, "api_error", headers={"x-should-retry": "false"}), ok())
    client, sleeps = client_for(server)
    with pytest.raises(ApiError) as caught:
        client(REQUEST)
    assert caught.value.status == 500 and sleeps == [] and len(server.requests) == 1


def test_x_should_retry_true_retries_a_400(api):
    server = api(error(400, "invalid_request_error", headers={"x-should-retry": "true"}), ok())
    client, sleeps = client_for(server)
    assert client(REQUEST) == MESSAGE and len(sleeps) == 1


@pytest.mark.parametrize("status, kind", [(400, "invalid_request_error"),
                                          (401, "authentication_error"),
                                          (403, "permission_error"), (404, "not_found_error")])
def test_client_errors_raise_at_once_with_request_id(api, status, kind):
    server = api(error(status, kind, "bad thing", request_id="req_header"))
    client, sleeps = client_for(server)
    with pytest.raises(ApiError) as caught:
        client(REQUEST)
    err = caught.value
    assert (err.status, err.error_type, err.message, err.request_id) == (
        status, kind, "bad thing", "req_header")
    assert "req_header" in str(err) and sleeps == []


def test_request_id_from_body_when_header_missing(api):
    response = error(400, "invalid_request_error")
    response["headers"] = {}
    response["body"]["request_id"] = "req_body"
    server = api(response)
    client, _ = client_for(server)
    with pytest.raises(ApiError) as caught:
        client(REQUEST)
    assert caught.value.request_id == "req_body"


def test_non_json_error_body(api):
    server = api({"status": 502, "headers": {"x-should-retry": "false"},
                  "body": b"<html>bad gateway</html>"})
    client, _ = client_for(server)
    with pytest.raises(ApiError) as caught:
        client(REQUEST)
    assert caught.value.error_type == "http_502" and "bad gateway" in caught.value.message


@pytest.mark.parametrize("body, words", [(b"not json {", "not JSON"),
                                         ({"type": "error"}, "not a message object"),
                                         ([1, 2], "not a message object")])
def test_a_200_that_is_not_a_message_is_a_clear_error(api, body, words):
    server = api(ok(body))
    client, sleeps = client_for(server)
    with pytest.raises(ApiError) as caught:
        client(REQUEST)
    assert caught.value.status == 200 and caught.value.error_type == "invalid_response"
    assert words in caught.value.message and caught.value.request_id == "req_ok"
    assert sleeps == []


def test_server_that_never_answers_times_out_retries_then_fails(api):
    server = api("hang", "hang", "hang")
    client, sleeps = client_for(server, timeout=0.2)
    with pytest.raises(ApiError) as caught:
        client(REQUEST)
    assert caught.value.error_type == "timeout_error" and caught.value.status is None
    assert len(sleeps) == 2 and len(server.requests) == 3


def test_on_retry_reports_each_wait(api):
    server = api(error(529, "overloaded_error"), ok())
    seen = []
    client = MessagesClient(api_key="k", base_url=server.url, sleep=lambda s: None,
                            rand=lambda: 0, on_retry=lambda n, d, e: seen.append((n, d, e.status)))
    client(REQUEST)
    assert seen == [(1, 0.5, 529)]


def test_unserialisable_body_and_bad_url_are_clear_errors():
    client = MessagesClient(api_key="k", base_url="http://127.0.0.1:9", sleep=lambda s: None)
    with pytest.raises(ApiError, match="not JSON"):
        client({"x": object()})
    for base in ("nonsense-without-scheme", "file:///etc", "http://127.0.0.1:notaport"):
        sleeps = []
        bad = MessagesClient(api_key="k", base_url=base, sleep=sleeps.append)
        with pytest.raises(ApiError) as caught:
            bad(REQUEST)
        assert caught.value.error_type == "invalid_url" and sleeps == []
