"""tests/support/webdriver.py's wait for a URL: it answers when the page the browser comes to
is the one asked for, also when the page navigates by itself later (the wait sees the unload and
looks at the next page), and after its timeout it says where the browser is instead."""

import os
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fixtures.http_thread import ServerThread
from tests.support.webdriver import Browser

pytestmark = [
    pytest.mark.skipif(not os.environ.get("TRIAGE_BROWSER_TESTS"),
                       reason="a browser test: make test-browser runs it"),
    pytest.mark.skipif(Browser.available() is not None, reason=str(Browser.available()))]

PAGES = {"/later": b"<script>setTimeout(() => location.href = '/next', 300)</script>",
         "/next": b"<p>next</p>"}


class _Pages(BaseHTTPRequestHandler):
    def do_GET(self):
        body = PAGES.get(self.path, b"")
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_wait_url_follows_a_navigation_that_comes_later_and_stops_at_its_timeout():
    server = ServerThread(ThreadingHTTPServer(("127.0.0.1", 0), _Pages)).start()
    base = f"http://127.0.0.1:{server.server.server_port}"
    try:
        with Browser.start() as browser:
            browser.get(f"{base}/later")
            assert browser.url() == f"{base}/later"   # the page moves on by itself, later
            assert browser.wait_url(f"{base}/next") == f"{base}/next"
            started = time.monotonic()
            assert browser.wait_url(f"{base}/elsewhere", timeout=0.3) == f"{base}/next"
            assert time.monotonic() - started < 5   # the timeout, not the default 30 s
    finally:
        server.stop()
