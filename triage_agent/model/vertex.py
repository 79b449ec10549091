"""Google Vertex AI as a transport of the Messages client: rawPredict with a bearer token.

    POST {base}/projects/PROJECT/locations/REGION/publishers/anthropic/models/MODEL:streamRawPredict
         (:rawPredict without streaming)
    base: https://REGION-aiplatform.googleapis.com/v1; https://aiplatform.googleapis.com/v1 for
          `global`, https://aiplatform.{us,eu}.rep.googleapis.com/v1 for the `us` and `eu`
          multi-regions (as the official client picks them); --base-url or
          ANTHROPIC_VERTEX_BASE_URL replace it
    body: the loop's request without `model` (a streamed one keeps "stream": true) plus
          "anthropic_version": "2026-10-21", as the official `anthropic` package's Vertex
          client sends it
    headers: authorization: Bearer TOKEN (gcp_tokens.py, fresh before it expires),
             content-type (the version travels in the body only, as the official client does)

The answer is the hosted API's: a message, or server-sent events read by sse.py. Google's own
error envelope ({"error": {"code", "message", "status"}}) is put in the operator's words.
"""

import json
import urllib.parse

from triage_agent.model import gateway, sse
from triage_agent.model.errors import ApiError

# Google's error statuses -> the Messages API's error types (the retry rules follow the HTTP
# status as for the hosted API)
STATUSES = {"PERMISSION_DENIED": "permission_error", "UNAUTHENTICATED": "authentication_error",
            "NOT_FOUND": "not_found_error", "INVALID_ARGUMENT": "invalid_request_error",
            "FAILED_PRECONDITION": "invalid_request_error",
            "RESOURCE_EXHAUSTED": "rate_limit_error", "UNAVAILABLE": "overloaded_error",
            "DEADLINE_EXCEEDED": "timeout_error", "INTERNAL": "api_error"}


def _segment(value) -> str:
    """A path segment as the official client encodes it: RFC 3986's pchar kept (`@` of a
    dated model id, `:`), all else percent-encoded, `;` too (a server may cut a segment there)."""
    return urllib.parse.quote(value, safe="!$&'()*+,=:@")


def default_base_url(region) -> str:
    if region == "global":
        return "https://aiplatform.googleapis.com/v1"
    if region in ("us", "eu"):
        return f"https://aiplatform.{region}.rep.googleapis.com/v1"
    return f"https://{region}-aiplatform.googleapis.com/v1"


class VertexTransport:
    """Claude on Vertex AI in `project` and `region`, with tokens from `tokens` (`get()`)."""
    provider = "gcp.vertex_ai"
    stream_types = ("text/event-stream",)
    request_id_header = "x-request-id"

    def __init__(self, *, project, region, tokens, base_url=None, headers=None):
        self.project, self.region = project, region
        self._custom = dict(headers or {})
        self.base_url = (base_url or default_base_url(region)).rstrip("/")
        self.url = self.base_url
        self._tokens, self._model = tokens, None

    def check(self):
        if not self.base_url.startswith(("http://", "https://")):
            raise ApiError(None, "invalid_url", f"the Vertex endpoint must start with http://"
                           f" or https:// (got {self.base_url!r})")

    def encode(self, body: dict, stream: bool) -> dict:
        self._model = str(body.get("model") or "")
        out = {k: v for k, v in body.items() if k not in ("model", "fallbacks", "stream")}
        out["anthropic_version"] = gateway.API_VERSION
        return dict(out, stream=True) if stream else out

    def prepare(self, data: bytes, stream: bool):
        from triage_agent.model.gcp_tokens import TokenError
        if self._model in ("", ".", ".."):
            raise ApiError(None, "invalid_request", f"model {self._model!r} cannot be a path "
                           "segment")
        specifier = "streamRawPredict" if stream else "rawPredict"
        url = (f"{self.base_url}/projects/{_segment(self.project)}/locations/"
               f"{_segment(self.region)}/publishers/anthropic/models/{_segment(self._model)}"
               f":{specifier}")
        try:
            token = self._tokens.get()
        except TokenError as exc:
            raise ApiError(None, "authentication_error", f"no Google access token: {exc}") \
                from None
        headers = dict(self._custom)
        quota = getattr(self._tokens, "quota_project", None)
        if quota:   # user credentials bill the quota project they name (google-auth's header)
            headers["x-goog-user-project"] = quota
        headers.update({"authorization": f"Bearer {token}", "content-type": "application/json",
                        "accept": "application/json", "user-agent": gateway.USER_AGENT})
        return url, headers

    def read_stream(self, response, **callbacks) -> dict:
        return sse.read_message(response, **callbacks)

    def error_fields(self, status, headers, body):
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            data = None
        if isinstance(data, list) and data and isinstance(data[0], dict):
            data = data[0]      # rawPredict may wrap the error in a list
        error = data.get("error") if isinstance(data, dict) else None
        if not isinstance(error, dict) or "status" not in error:
            return gateway.error_fields(status, body)   # the Messages API's own envelope
        code, message = str(error.get("status")), str(error.get("message") or "(no message)")
        return STATUSES.get(code, f"http_{status}"), self.explain(code, message), None

    def explain(self, code, message) -> str:
        said, advice = f"Vertex AI {code}: {message}", None
        if code == "PERMISSION_DENIED":
            advice = (f"enable model {self._model!r} for project {self.project} in Vertex AI "
                      "Model Garden, and give the caller roles/aiplatform.user")
        elif code == "NOT_FOUND":
            advice = (f"check the model id {self._model!r} (Vertex ids look like "
                      f"claude-...@DATE or claude-...) and that region {self.region} offers it")
        elif code == "UNAUTHENTICATED":
            advice = "the access token is expired or invalid: refresh the credentials"
        elif code == "RESOURCE_EXHAUSTED":
            advice = "the project's quota for this model is spent: wait, or ask for more quota"
        return f"{said}; what to do: {advice}" if advice else said
