"""Prometheus' HTTP API for the metrics tools: GET only, six query endpoints, bounded in time and size.

    tools/metrics.py ── client.api("query_range", {...}, reader=view) ──┐
        direct   GET URL/api/v1/query_range?...  (urllib; bearer token, private CA)
        service  GET /api/v1/namespaces/NS/services/NAME:PORT/proxy/api/v1/query_range?...
                 over the kubectl proxy the server already runs (kubectl keeps the credentials)
    <── the envelope's `data`, or PrometheusError: one line saying what to check

Prometheus answers {"status": "success", "data": ..., "warnings": [...]} or {"status": "error",
"errorType", "error"} (400 bad_data, 422 execution, 503 unavailable). Anything else, a login
page, Grafana, a 200 without that envelope, is "not Prometheus" and said so. Only ENDPOINT
names can be asked for. In direct mode the first query is preceded by `buildinfo()`
(/api/v1/status/buildinfo: "who answers at this URL", whose version `describe()` then names);
the service proxy opens only the query endpoints, where the envelope alone tells Prometheus.
"""

import json
import re
from urllib.parse import urlencode, urlsplit

from mcp_kubectl_server.read.errors import ReadError, redacted_line

ENDPOINT = re.compile(r"query|query_range|series|labels|label/[a-zA-Z_][a-zA-Z0-9_]*/values|metadata")
SERVICE = re.compile(r"([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)/([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)"
                     r":([a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?)")
MAX_BYTES = 8 * 1024 * 1024
REDIRECTS = (301, 302, 303, 307, 308)  # what urllib follows
TIMEOUT = 10.0


class PrometheusError(ReadError):
    """A Prometheus read that failed; str() says what went wrong and what to check."""


def parse_service(text):
    """'monitoring/prometheus-k8s:9090' -> (namespace, name, port); ValueError when malformed."""
    match = SERVICE.fullmatch(text or "")
    if not match:
        raise ValueError(f"{text!r} is not NAMESPACE/SERVICE:PORT (e.g. monitoring/prometheus:9090;"
                         " the port is a number or the port's name)")
    return match.group(1), match.group(3), match.group(5)


def service_prefix(text):
    """The service-proxy path a --prometheus-service value opens, up to .../proxy."""
    namespace, name, port = parse_service(text)
    return f"/api/v1/namespaces/{namespace}/services/{name}:{port}/proxy"


def _target(endpoint, params):
    if not ENDPOINT.fullmatch(endpoint):
        raise ValueError(f"not a Prometheus query endpoint: {endpoint!r}")
    pairs = [(key, item) for key, value in (params or {}).items()
             for item in (value if isinstance(value, (list, tuple)) else [value])]
    return "/api/v1/" + endpoint + ("?" + urlencode(pairs) if pairs else "")


def unwrap(status, body, *, where):
    """The `data` of a Prometheus answer (status code, body bytes), or PrometheusError."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        doc = None
    if not isinstance(doc, dict) or doc.get("status") not in ("success", "error"):
        shown = redacted_line(bytes(body[:2048]).decode("utf-8", "replace"), 120)
        raise PrometheusError(
            f"{where} answered ({status}) but not as Prometheus' API does (no JSON status envelope:"
            f" {shown or 'empty body'}); check that it points at Prometheus itself (its base URL,"
            " without /api/v1), not at Grafana, a login page or another service")
    if doc["status"] == "error":
        kind, error = doc.get("errorType") or "error", redacted_line(doc.get("error") or "", 300)
        if kind in ("bad_data", "execution") or status in (400, 422):
            raise PrometheusError(f"Prometheus refused the query ({kind}): {error}; fix the query")
        if kind == "timeout":
            raise PrometheusError(f"Prometheus gave up on the query (timeout: {error}); ask for fewer"
                                  " series, a shorter range or a larger step")
        raise PrometheusError(f"Prometheus could not answer ({status} {kind}: {error}); try again later")
    if status != 200:
        raise PrometheusError(f"{where} answered {status} with a success envelope; try again later")
    return doc.get("data")


class DirectPrometheus:
    """Prometheus at a URL; `token_file` is read at each request (tokens get rotated)."""

    def __init__(self, url, *, token_file=None, ca_file=None, timeout=TIMEOUT, max_bytes=MAX_BYTES):
        parts = urlsplit(url or "")
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise ValueError(f"{url!r} is not an http(s) base URL such as http://prometheus:9090")
        self.url, self.where = url.rstrip("/"), f"Prometheus at {url.rstrip('/')}"
        self.version = None  # from buildinfo, asked before the first query
        self.token_file, self.timeout, self.max_bytes = token_file, timeout, max_bytes
        import ssl  # here, not at import: the server starts without http, ssl and email loaded
        import threading
        import urllib.request
        context = None
        if parts.scheme == "https":
            context = ssl.create_default_context(cafile=ca_file)  # OSError/SSLError: bad --prometheus-ca
        self._opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))
        self._parts, self._context = parts, context
        self._conn, self._lock = None, threading.Lock()
        # Through a proxy the environment names (HTTPS_PROXY, NO_PROXY), urllib does all the work.
        self._proxied = parts.scheme in urllib.request.getproxies() and not urllib.request.proxy_bypass(
            parts.hostname or "")

    def describe(self):
        """Who answers: 'Prometheus 2.42.0 at URL' once buildinfo was read."""
        return self.where.replace("Prometheus", f"Prometheus {self.version}", 1) if self.version else self.where

    def _headers(self):
        if not self.token_file:
            return {}
        try:
            with open(self.token_file, encoding="utf-8") as handle:
                token = handle.read().strip()
        except OSError as exc:
            raise PrometheusError(f"cannot read --prometheus-token-file {self.token_file!r}"
                                  f" ({exc.strerror}); the operator must fix the file") from None
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _get(self, target, timeout):
        """(status, body) of one GET: over a kept-alive connection (a get_metrics call sends five
        queries; a new connection, and over https a new handshake, each cost more than the query),
        or through urllib for a proxy from the environment and to follow a redirect."""
        if self._proxied:
            return self._get_urllib(self.url + target, timeout)
        status, body, location = self._get_kept(target, timeout)
        if location is None:
            return status, body
        from urllib.parse import urljoin  # a redirect: followed as urllib does, the token not sent on
        return self._get_urllib(urljoin(self.url + target, location), timeout, token=False)

    def _get_kept(self, target, timeout):
        """(status, body, None), or (status, body, Location) for a redirect to follow."""
        import http.client
        import socket
        import ssl
        headers = {"Accept": "application/json", **self._headers()}
        path = self._parts.path.rstrip("/") + target
        with self._lock:
            for attempt in (1, 2):
                reused = self._conn is not None
                try:
                    conn = self._connection(timeout)
                    conn.request("GET", path, headers=headers)
                    response = conn.getresponse()
                    location = response.getheader("Location") if response.status in REDIRECTS else None
                    body = _read_capped(response, self.max_bytes, status=response.status)
                    if response.will_close:
                        self._drop()
                    return response.status, body, location
                except PrometheusError:
                    self._drop()  # the rest of the body is still unread
                    raise
                except (TimeoutError, socket.timeout):
                    self._drop()
                    raise PrometheusError(self._slow()) from None
                except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError,
                        ssl.SSLEOFError) as exc:
                    self._drop()  # a kept connection Prometheus had closed: once more, afresh
                    if not reused or attempt == 2:
                        raise PrometheusError(self._unreachable(exc)) from None
                except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
                    self._drop()
                    raise PrometheusError(self._unreachable(exc)) from None
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _connection(self, timeout):
        import http.client
        if self._conn is None:
            port = self._parts.port
            if self._parts.scheme == "https":
                self._conn = http.client.HTTPSConnection(self._parts.hostname, port, timeout=timeout,
                                                         context=self._context)
            else:
                self._conn = http.client.HTTPConnection(self._parts.hostname, port, timeout=timeout)
        self._conn.timeout = timeout
        if self._conn.sock is not None:
            self._conn.sock.settimeout(timeout)
        return self._conn

    def _drop(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _get_urllib(self, url, timeout, *, token=True):
        import socket
        import urllib.error
        import urllib.request
        request = urllib.request.Request(url, method="GET", headers={"Accept": "application/json"})
        for key, value in (self._headers() if token else {}).items():
            request.add_unredirected_header(key, value)  # never sent on to a redirect's host
        try:
            with self._opener.open(request, timeout=timeout) as response:
                return response.status, _read_capped(response, self.max_bytes)
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, _read_capped(exc, self.max_bytes, status=exc.code)
        except (TimeoutError, socket.timeout):
            raise PrometheusError(self._slow()) from None
        except urllib.error.URLError as exc:
            raise PrometheusError(self._unreachable(exc.reason)) from None
        except OSError as exc:  # a reset or a timeout while reading the body
            if "timed out" in str(exc):
                raise PrometheusError(self._slow()) from None
            raise PrometheusError(self._unreachable(exc)) from None

    def _slow(self):
        return (f"{self.where} did not answer within {self.timeout:g}s: it is slow or overloaded;"
                " ask for fewer series, a shorter range or a larger step, or try again later")

    def _unreachable(self, reason):
        import ssl
        if isinstance(reason, TimeoutError):  # socket.timeout is TimeoutError since 3.10
            return self._slow()
        if isinstance(reason, ssl.SSLError):
            return (f"TLS with {self.where} failed ({redacted_line(reason, 200)}): check"
                    " --prometheus-ca (the CA that signed its certificate)")
        return (f"cannot reach {self.where} ({redacted_line(reason, 200)}): it is down or"
                " --prometheus-url names the wrong host or port; the operator should check it"
                " (GET /api/v1/status/buildinfo)")

    def api(self, endpoint, params=None, *, reader=None):
        """One GET of an ENDPOINT -> the envelope's data (PrometheusError on any failure)."""
        target = _target(endpoint, params)
        if self.version is None:  # once: is it Prometheus at all (a login page can say 200)?
            self.version = str(self.buildinfo().get("version"))
        timeout = self.timeout
        if reader is not None and getattr(reader, "_deadline", None):
            timeout = max(0.1, min(timeout, reader.remaining()))
        status, body = self._get(target, timeout)
        if status in (401, 403):
            raise PrometheusError(self._refused(status))
        return unwrap(status, body, where=self.where)

    def _refused(self, status):
        word = "rejected the credentials (401 Unauthorized)" if status == 401 else "refused (403 Forbidden)"
        return (f"{self.where} {word}: check --prometheus-token-file (a bearer token that is"
                " missing, expired or lacks the right to read the query API); retrying will not help")

    def buildinfo(self):
        """GET /api/v1/status/buildinfo -> {"version", ...}: whether Prometheus answers here."""
        status, body = self._get("/api/v1/status/buildinfo", self.timeout)
        if status in (401, 403):
            raise PrometheusError(self._refused(status))
        data = unwrap(status, body, where=self.where)
        if not isinstance(data, dict) or "version" not in data:
            raise PrometheusError(f"{self.where} has no build information: it is not Prometheus")
        return data


class ServicePrometheus:
    """Prometheus as a Kubernetes Service, through the server's kubectl proxy (service_prefix)."""

    def __init__(self, service, *, max_bytes=MAX_BYTES):
        self.service, self.prefix, self.max_bytes = service, service_prefix(service), max_bytes
        self.where = f"Prometheus service {service} (through kubectl proxy)"

    def describe(self):
        return self.where

    def api(self, endpoint, params=None, *, reader):
        """One GET through `reader` (a Reader view) -> the envelope's data, or PrometheusError."""
        target = _target(endpoint, params)
        path, _, query = target.partition("?")
        try:
            status, content_type, body = reader.get_service(self.prefix + path, query,
                                                           max_bytes=self.max_bytes)
        except PrometheusError:
            raise
        except ReadError as exc:
            raise PrometheusError(f"{self.where}: {exc}") from None
        if status != 200 and not _is_envelope(body):
            raise PrometheusError(self._proxy_text(status, content_type, body))
        return unwrap(status, body, where=self.where)

    def _proxy_text(self, status, content_type, body):
        namespace, name, port = parse_service(self.service)
        text = redacted_line(bytes(body[:4096]).decode("utf-8", "replace"), 200)
        if status == 403 and "json" not in content_type:
            return (f"the read-only kubectl proxy refused the path to {self.where} ({text}); this"
                    " server opens only Prometheus' query endpoints on that one service")
        if status == 403:
            return (f"the cluster refused {self.where} (403: {text}): these credentials need get on"
                    f" services/proxy for {name} in {namespace} (outputs/rbac-readonly.yaml)")
        if status == 401:
            return f"the cluster rejected the credentials for {self.where} (401): log in again"
        if status == 404:
            return (f"{self.where} was not found (404: {text}): check --prometheus-service"
                    f" (`kubectl get service {name} -n {namespace}` and its port {port})")
        if status in (502, 503):
            return (f"{self.where} did not answer through the API server ({status}: {text}): its"
                    f" pods are down or not ready, or the port {port} is wrong")
        return f"{self.where} answered {status}: {text}"


def _is_envelope(body):
    return bytes(body[:64]).lstrip().startswith(b'{"status"')


def _read_capped(response, limit, status=200):
    body = response.read(limit + 1)
    if len(body) > limit:
        raise PrometheusError(f"the answer passed the {limit} byte cap and was stopped: ask for fewer"
                              " series (topk, a narrower selector) or a larger step")
    return body
