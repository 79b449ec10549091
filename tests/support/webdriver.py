"""A small W3C WebDriver client (stdlib only) for the browser test: chromedriver + Debian's
chromium, headless.

    with Browser.start() as browser:        # chromedriver on a free port, one new session
        browser.get(url); browser.find("#command").text(); browser.find("button").click()
        browser.wait_url(url); browser.wait_text(css, text)   # after a click that navigates
        browser.screenshot(path); browser.cookies(); browser.source()

Each command is one HTTP request to chromedriver (POST/GET/DELETE /session/ID/...), answered
with {"value": ...}; an error answer ({"value": {"error", "message"}}) raises WebDriverError.
`Browser.available()` says why a browser test cannot run (no chromium or chromedriver).
"""

import base64
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
CHROMIUM = ("chromium", "chromium-browser")
DRIVER = ("chromedriver",)
# running as root in a container: no sandbox, no GPU, nothing phoning home
ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", "--window-size=1200,1400")


# Answers true when the page is the URL asked for; otherwise never (see Browser.wait_url).
WAIT_FOR_URL = "const [url, done] = arguments; if (location.href === url) done(true);"


class WebDriverError(Exception):
    """chromedriver answered with an error."""


def _which(names):
    return next((path for path in map(shutil.which, names) if path), None)


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Element:
    def __init__(self, browser, element_id):
        self.browser, self.id = browser, element_id

    def _cmd(self, method, what, body=None):
        return self.browser.command(method, f"element/{self.id}/{what}", body)

    def text(self) -> str:
        return self._cmd("GET", "text")

    def attribute(self, name):
        return self._cmd("GET", f"attribute/{name}")

    def click(self):
        self._cmd("POST", "click", {})

    def type(self, text):
        self._cmd("POST", "value", {"text": text})


class Browser:
    """One chromedriver process and one browser session."""

    @staticmethod
    def available() -> "str | None":
        """None when chromium and chromedriver are installed, else what is missing."""
        missing = [what for what, names in (("chromium", CHROMIUM), ("chromedriver", DRIVER))
                   if not _which(names)]
        return f"not installed: {', '.join(missing)} (make test-browser installs them)" \
            if missing else None

    @classmethod
    def start(cls, *, timeout=30.0):
        return cls(timeout=timeout)

    def __init__(self, *, timeout=30.0):
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.timeout = timeout
        self.profile = tempfile.TemporaryDirectory(prefix="triage-chromium-")
        self.driver = subprocess.Popen([_which(DRIVER), f"--port={self.port}"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.session = None
        try:
            self._wait_ready()
            options = {"binary": _which(CHROMIUM),
                       "args": [*ARGS, f"--user-data-dir={self.profile.name}"]}
            answer = self._http("POST", "/session", {"capabilities": {"alwaysMatch": {
                "browserName": "chrome", "goog:chromeOptions": options}}})
            self.session = answer["sessionId"]
        except BaseException:
            self.close()
            raise

    def _wait_ready(self):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                if self._http("GET", "/status").get("ready"):
                    return
            except (OSError, WebDriverError):
                pass
            if self.driver.poll() is not None or time.monotonic() > deadline:
                raise WebDriverError("chromedriver did not start")
            time.sleep(0.05)  # polling a starting process: there is no event to wait on

    def _http(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            answer = json.loads(exc.read() or b"{}")
        value = answer.get("value")
        if isinstance(value, dict) and value.get("error"):
            raise WebDriverError(f"{value['error']}: {value.get('message', '')[:300]}")
        return value

    def command(self, method, what, body=None):
        """One WebDriver command of this session."""
        return self._http(method, f"/session/{self.session}/{what}", body)

    def get(self, url):
        self.command("POST", "url", {"url": url})

    def url(self) -> str:
        return self.command("GET", "url")

    def title(self) -> str:
        return self.command("GET", "title")

    def source(self) -> str:
        return self.command("GET", "source")

    def find(self, css) -> Element:
        return Element(self, self.command("POST", "element", {"using": "css selector",
                                                              "value": css})[ELEMENT])

    def find_all(self, css) -> list:
        found = self.command("POST", "elements", {"using": "css selector", "value": css})
        return [Element(self, item[ELEMENT]) for item in found]

    def wait_text(self, css, text, *, timeout=30.0) -> bool:
        """True once an element matching css shows text (a page that is being replaced, e.g.
        after a form's POST and redirect, is looked at again), False after timeout seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if any(text in element.text() for element in self.find_all(css)):
                    return True
            except WebDriverError:  # the element went stale with its page: look again
                pass
            time.sleep(0.05)  # the browser offers no event to wait on over plain WebDriver
        return False

    def wait_url(self, url, *, timeout=30.0) -> str:
        """The page's URL once it is `url` (a click that submits a form or follows a link
        returns before the browser has navigated), or the URL it has after timeout seconds.
        Waits on the page's events, not a poll: a script in the page answers at once when the
        page is `url`, and else only when the page is unloaded (the driver then reports the
        unload, and the script runs again in the page that came next) or at the timeout."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            self.command("POST", "timeouts", {"script": int(left * 1000)})
            try:
                if self.command("POST", "execute/async", {"script": WAIT_FOR_URL, "args": [url]}):
                    break
            except WebDriverError as exc:
                if "timeout" in str(exc):
                    break
                if "unload" not in str(exc):   # only an unload means: look at the next page
                    raise
        return self.url()

    def script(self, code, *args):
        """Run a script through the driver (not the page: CSP does not apply to it)."""
        return self.command("POST", "execute/sync", {"script": code, "args": list(args)})

    def cookies(self) -> list:
        return self.command("GET", "cookie")

    def screenshot(self, path):
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(self.command("GET", "screenshot")))

    def close(self):
        if self.session:
            try:
                self._http("DELETE", f"/session/{self.session}")
            except (OSError, WebDriverError):
                pass
            self.session = None
        self.driver.terminate()
        try:
            self.driver.wait(10)
        except subprocess.TimeoutExpired:
            self.driver.kill()
            self.driver.wait()
        self.profile.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
