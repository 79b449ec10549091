"""A real Prometheus for tests: series the test describes, as OpenMetrics text, started by the
simulator's launcher (fixtures/kube_sim/prometheus.py: promtool writes the blocks, a free
loopback port, nothing scraped, nothing leaves the machine); here, the query helpers.

    series = [Series("http_requests_total", {"namespace": "prod", "pod": "web-1"},
                     lambda age: 1000 - age / 10)]        # value at `age` seconds before now
    with start_prometheus(series) as prom:
        prom.query('http_requests_total')    # -> (HTTP status, decoded JSON), evaluated at now
        prom.url, prom.now

The fixture `prometheus_servers` (session scope) is a factory: prometheus_servers(name, series)
returns a running Prometheus, started on first use for each name and stopped at the end of the
session; every server of a session shares one `now`, so that two of them can answer the same
query over the same points. Samples are written every Series.step seconds over the last
Series.minutes minutes, and over Series.ahead minutes after now: a query that names no time
is evaluated at the wall clock, which leaves the data's last sample behind as the session runs
(Prometheus looks back 5 minutes), so a test either names the time (Prometheus.query does:
now) or gives its series some minutes ahead. The `prometheus` and `promtool` binaries (Debian's prometheus package,
2.42; `make prometheus-deps`) are required: without them the test fails with that message.
"""

import contextlib
import http.client
import json
import math
import shutil
import threading
import time
import urllib.parse
from dataclasses import dataclass

import pytest

from fixtures.kube_sim import prometheus as launcher

INSTALL_HINT = ("the prometheus and promtool binaries are needed by this test: run `make "
                "prometheus-deps` (Debian's prometheus package, which has both)")


@dataclass
class Series:
    """One series: metric name, labels, and its value at `age` seconds before now (a number
    for a constant; None from the function leaves a gap; after now, age is negative)."""
    name: str
    labels: dict
    value: object = 1.0
    step: int = 30
    minutes: int = 60
    ahead: int = 0

    def sample(self, age):
        return self.value(age) if callable(self.value) else self.value


def openmetrics(series, now):
    """OpenMetrics text of the series (families kept together, as promtool requires)."""
    families = {}
    for s in series:
        families.setdefault(s.name, []).append(s)
    lines = []
    for name, members in families.items():
        for s in members:
            labels = ",".join(f'{k}="{_escape(v)}"' for k, v in s.labels.items())
            head = f"{name}{{{labels}}}" if labels else name
            last = -(s.ahead * 60 // s.step * s.step)
            for age in range(s.minutes * 60 // s.step * s.step, last - 1, -s.step):
                value = s.sample(age)
                if value is not None:
                    lines.append(f"{head} {_number(value)} {now - age}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _escape(value):
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value):
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def require_binaries():
    """The paths of prometheus and promtool; pytest.fail with the install hint without them."""
    paths = shutil.which("prometheus"), shutil.which("promtool")
    if None in paths:
        pytest.fail(INSTALL_HINT, pytrace=False)
    return paths


class Prometheus:
    """A running Prometheus: its URL, the `now` its data is anchored at, and GET helpers. The
    GETs share one kept-alive connection (a fidelity test sends thousands of queries; a new
    connection for each cost both sides more than the query), one request at a time."""

    def __init__(self, url, now, process, log):
        self.url, self.now, self.process, self.log = url, now, process, log
        self._conn, self._lock = None, threading.Lock()

    def get(self, path, params=None, *, timeout=10.0):
        """(HTTP status, decoded JSON body or the body's text) of a GET to this Prometheus."""
        target = path + ("?" + urllib.parse.urlencode(params) if params else "")
        with self._lock:
            status, body = self._exchange(target, timeout)
        text = body.decode("utf-8", "replace")
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def close(self):
        """Close the kept connection (the Prometheus process is stopped by its owner)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _exchange(self, target, timeout):
        """One GET over the kept connection, opened again once when Prometheus had closed it."""
        for attempt in (1, 2):
            if self._conn is None:
                parts = urllib.parse.urlsplit(self.url)
                self._conn = http.client.HTTPConnection(parts.hostname, parts.port)
            self._conn.timeout = timeout
            if self._conn.sock is not None:
                self._conn.sock.settimeout(timeout)
            try:
                self._conn.request("GET", target)
                response = self._conn.getresponse()
                return response.status, response.read()
            except (ConnectionError, http.client.BadStatusLine, http.client.CannotSendRequest):
                self._conn.close()
                self._conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def query(self, promql, *, at=None):
        """(status, answer) of an instant query, evaluated at `at` (default: self.now)."""
        return self.get("/api/v1/query", {"query": promql, "time": self.now if at is None else at})


@contextlib.contextmanager
def start_prometheus(series, *, now=None):
    """A Prometheus serving `series` (anchored at `now`), stopped on exit."""
    require_binaries()
    now = int(time.time()) if now is None else now
    try:
        launched = launcher.start_prometheus(openmetrics(series, now))
    except launcher.PrometheusStartError as exc:
        raise RuntimeError(str(exc)) from None
    server = Prometheus(launched.url, now, launched.proc, launched.log)
    try:
        status, _ = server.get("/-/ready")
        if status != 200:
            raise RuntimeError(f"Prometheus logged ready but /-/ready answered {status}")
        yield server
    finally:
        server.close()
        launched.stop()


@pytest.fixture(scope="session")
def prometheus_servers():
    """Factory: prometheus_servers(name, series) -> a running Prometheus (one per name per
    session, all anchored at the same `now`)."""
    now, started = int(time.time()), {}
    with contextlib.ExitStack() as stack:
        def get(name, series):
            if name not in started:
                started[name] = stack.enter_context(start_prometheus(series, now=now))
            return started[name]
        yield get
