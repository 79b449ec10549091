"""The hosted API and gateways in front of it: where a request goes and what headers it carries.

    POST {base}/v1/messages
    x-api-key: KEY                   anthropic-version: 2026-10-21
    authorization: Bearer TOKEN      (ANTHROPIC_AUTH_TOKEN, for gateways that take one)
    anthropic-beta: ...              (fallbacks, with the `anthropic` profile)
    Name: value                      (--header, ANTHROPIC_CUSTOM_HEADERS: a gateway's own)

`HttpTransport` is the transport seam of messages.MessagesClient for this family; bedrock.py and
vertex.py are the others. A transport turns the loop's body into bytes once per call
(`encode`), gives the URL and headers of each attempt (`prepare`: signatures and tokens are
fresh every time), reads a stream (`read_stream`) and words a failed status (`error_fields`).
Header values are secrets as often as not: nothing here prints them.
"""

import json

from triage_agent.model import profiles, sse
from triage_agent.model.errors import ApiError

API_VERSION = "2026-10-21"
FALLBACK_BETA = "server-side-fallback-2026-07-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
USER_AGENT = "triage-agent/0.1 (python-urllib)"
# headers the client sets itself: a custom header may not replace them
RESERVED = ("content-type", "content-length", "host", "accept", "anthropic-version",
            "x-api-key", "authorization", "transfer-encoding", "x-amz-date",
            "x-amz-security-token")


class HeaderError(ValueError):
    """A `Name: value` header that cannot be sent."""


def parse_header(text, where="--header") -> tuple:
    """`Name: value` -> (name, value); HeaderError names the problem, never the value."""
    name, colon, value = str(text).partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not name or any(c in name for c in " \t()<>@,;\\\"/[]?={}") \
            or not name.isascii() or not name.isprintable():
        raise HeaderError(f"{where}: give 'Name: value' (a header name is one token)")
    if "\r" in value or "\n" in value or "\x00" in value:
        raise HeaderError(f"{where}: the value of {name} holds a line break")
    if name.lower() in RESERVED:
        raise HeaderError(f"{where}: {name} is set by the client itself")
    return name, value


def custom_headers(flags=(), environ_value=None) -> dict:
    """ANTHROPIC_CUSTOM_HEADERS (one `Name: value` a line) and then --header, which win."""
    headers = {}
    for line in (environ_value or "").splitlines():
        if line.strip():
            name, value = parse_header(line, "ANTHROPIC_CUSTOM_HEADERS")
            headers[name.lower()] = (name, value)
    for text in flags:
        name, value = parse_header(text)
        headers[name.lower()] = (name, value)
    return dict(headers.values())


def error_fields(status: int, body: bytes):
    """(error.type, message, body request_id) from an error body, tolerating non-JSON."""
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), dict):
        error = data["error"]   # the API's envelope, or llama-server's {"error": {code, ...}}
        rid = data.get("request_id") if isinstance(data.get("request_id"), str) else None
        return (str(error.get("type") or f"http_{status}"),
                str(error.get("message") or "(no message)"), rid)
    if isinstance(data, dict) and isinstance(data.get("error"), str) and data["error"].strip():
        return f"http_{status}", snippet(data["error"].encode("utf-8")), None  # Ollama's own
    return f"http_{status}", snippet(body) or "(empty body)", None


def snippet(body: bytes, limit=200) -> str:
    text = body.decode("utf-8", "replace").strip()
    return text if len(text) <= limit else text[:limit] + "..."


class HttpTransport:
    """The hosted Messages API or a gateway/self-hosted server at `base_url`."""
    provider = "anthropic"
    stream_types = ("text/event-stream",)
    request_id_header = "request-id"

    def __init__(self, *, api_key=None, base_url=DEFAULT_BASE_URL, profile="anthropic",
                 auth_token=None, fallbacks=True, headers=None):
        if profile not in profiles.PROFILES:
            raise ValueError(f"unknown API profile {profile!r}")
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.url = self.base_url + "/v1/messages"
        self.profile = profile
        self.fallbacks = fallbacks and profile == "anthropic"
        self._api_key, self._auth_token = api_key, auth_token
        self._custom = dict(headers or {})

    def check(self):
        if not self.url.startswith(("http://", "https://")):
            raise ApiError(None, "invalid_url", f"the API base URL must start with http:// or"
                           f" https:// (got {self.base_url!r})")

    def encode(self, body: dict, stream: bool) -> dict:
        """The body as this endpoint takes it (a copy; the loop's body is unchanged)."""
        if self.profile == "compatible":
            body = profiles.compatible_request(body)
        return dict(body, stream=True) if stream else body

    def prepare(self, data: bytes, stream: bool):
        """(url, headers) of one attempt (the key included; never log the headers)."""
        headers = dict(self._custom)
        headers.update({"x-api-key": self._api_key or "", "anthropic-version": API_VERSION,
                        "content-type": "application/json", "accept": "application/json",
                        "user-agent": USER_AGENT})
        if not self._api_key and (self._auth_token or self.profile != "anthropic"):
            del headers["x-api-key"]   # a bearer token, or a server that takes no key
        if self._auth_token:
            headers["authorization"] = f"Bearer {self._auth_token}"
        if self.fallbacks:
            headers["anthropic-beta"] = FALLBACK_BETA
        return self.url, headers

    def read_stream(self, response, **callbacks) -> dict:
        return sse.read_message(response, **callbacks)

    def error_fields(self, status, headers, body):
        error_type, message, rid = error_fields(status, body)
        return error_type, profiles.server_words(error_type, message) or message, rid
