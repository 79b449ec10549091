"""Read failures as one line for the model: what went wrong and what to do next.

An answer that is not 200 comes either from the API server (a Kubernetes Status object in JSON:
401, 403 RBAC, 404, 410, 429, 5xx) or from the kubectl proxy itself (plain text: 403 "Forbidden"
when its path or method filter refused the request, 5xx when it could not reach the API server or
get credentials). `http_error_text` tells these apart and words each like kubectl would, plus the
next step. Texts are redacted, then cut to one line: a cut must never split a secret so that
the redactor no longer recognises it (the whole result is redacted again later, in one place).
"""

import json


MESSAGE_MAX = 400


class ReadError(Exception):
    """A read that failed; str() is a one-line message for the model saying what to do next.

    `status` is the HTTP status when an answer came (404: a handler may treat a missing object
    or an API group the cluster lacks as a fact rather than a failure), else None."""

    def __init__(self, message, *, status=None):
        super().__init__(message)
        self.status = status


class CancelledError(Exception):
    """The tool call that was reading was cancelled by the client (notifications/cancelled)."""


def redacted_line(text, limit=MESSAGE_MAX):
    """Redacted, whitespace collapsed, then cut to `limit` characters."""
    from mcp_kubectl_server.redact import redact   # at the first error: not before the proxy's launch
    text = " ".join(redact(str(text)).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _status(body):
    """(reason, message, details) of a Kubernetes Status body, or None for anything else."""
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict) or doc.get("kind") != "Status":
        return None
    details = doc.get("details") if isinstance(doc.get("details"), dict) else {}
    return str(doc.get("reason") or ""), redacted_line(doc.get("message") or ""), details


def http_error_text(status, content_type, body, *, path, namespaces=()):
    """The one-line error for a non-200 answer to GET `path`."""
    parsed = _status(body) if "json" in content_type else None
    if parsed is None:
        return _proxy_text(status, redacted_line(body.decode("utf-8", "replace")), path, namespaces)
    reason, message, details = parsed
    if status == 401:
        return (f"the cluster rejected the credentials (401 Unauthorized: {message}): the token or"
                " client certificate of this kubeconfig context is missing, expired or wrong; the"
                " operator must log in again and restart the server. Retrying will not help")
    if status == 403:
        return (f"the cluster refused this read (403 Forbidden): {message}. These credentials cannot"
                " read that (RBAC); do not retry it, work with what the other tools show")
    if status == 404 and details.get("name"):
        return (f"not found (404): {message}; check the exact name and namespace: the object may"
                " have been deleted or replaced, so list what exists before asking again")
    if status == 404:
        return (f"the API server does not serve {path} (404: {message}): this cluster may not have"
                " that API group or version; do not retry it")
    if status == 410:
        return f"the list changed while it was being read (410 {reason or 'Expired'}); ask again"
    if status == 429:
        return (f"the API server is rate limiting this client (429 {reason or 'TooManyRequests'}:"
                f" {message}); wait a little and try again")
    if status >= 500:
        return (f"the API server failed ({status} {reason or 'InternalError'}): {message}; try again"
                " later")
    return f"the API server refused the read ({status} {reason or 'Error'}): {message}"


def _proxy_text(status, text, path, namespaces):
    if status == 403:
        return (f"the read-only proxy refused GET {path}: this server reads only its tools' paths in"
                f" the namespaces {', '.join(namespaces) or '(none)'}, never Secrets, exec, attach,"
                " port-forward or proxy; do not retry it")
    lowered = text.lower()
    if "connection refused" in lowered or "no such host" in lowered or "dial tcp" in lowered:
        return (f"cannot reach the Kubernetes API server ({text}): the cluster is down or the"
                " kubeconfig context points at the wrong address; the operator should check"
                " `kubectl cluster-info` with the same --context/--kubeconfig")
    if "timeout" in lowered or "deadline exceeded" in lowered:
        return (f"the Kubernetes API server did not answer in time ({text}): the cluster is slow or"
                " unreachable; try again later")
    if status == 401:
        return (f"the cluster rejected the credentials (401 Unauthorized: {text or 'no message'}):"
                " the operator must log in again and restart the server. Retrying will not help")
    return f"the kubectl proxy could not complete the read ({status}): {text or 'no message'}"
