"""Amazon Bedrock as a transport of the Messages client: SigV4-signed InvokeModel calls.

    POST https://bedrock-runtime.REGION.amazonaws.com/model/MODEL/invoke-with-response-stream
         (/invoke with --no-stream; MODEL URL-quoted, `:` and `;` kept, as the official
         client does)
    body: the loop's request without `model` and `stream`, plus
          "anthropic_version": "2026-10-21" (the API version, as the official `anthropic`
          package's Bedrock client sends it since its 2026 releases) and, when there are beta
          features, "anthropic_beta": [...]
    headers: content-type, accept, host, x-amz-date, x-amz-security-token, authorization (SigV4,
             service `bedrock`), signed fresh for every attempt with the chain's credentials;
             or, with a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK, as the official client
             reads it), authorization: Bearer KEY and no signature

The streamed answer is AWS event-stream framing (eventstream.py): each `chunk` event's payload
is {"bytes": base64 of one Messages stream event}, handed to sse.MessageAssembler as the hosted
API's events are. An exception frame (throttlingException, modelStreamErrorException, ...) or a
failed status (x-amzn-ErrorType: ValidationException:...) becomes the Messages API's error type,
so the client's retry and exit rules apply unchanged, with the operator's words for the usual
causes: model access not enabled, a model id the region does not offer, expired credentials.
"""

import base64
import json
import urllib.parse

from triage_agent.model import eventstream, gateway, sigv4, sse
from triage_agent.model.errors import ApiError

SERVICE = "bedrock"
CHUNK = 65536
# Bedrock's exceptions (HTTP status or stream frame) -> the Messages API's error types, whose
# retry rules the client already keeps (429, 5xx and these types in a stream are retried)
ERROR_TYPES = {
    "accessdeniedexception": "permission_error",
    "unrecognizedclientexception": "authentication_error",
    "invalidsignatureexception": "authentication_error",
    "expiredtokenexception": "authentication_error",
    "validationexception": "invalid_request_error",
    "resourcenotfoundexception": "not_found_error",
    "servicequotaexceededexception": "rate_limit_error",
    "throttlingexception": "rate_limit_error",
    "modelnotreadyexception": "overloaded_error",
    "modeltimeoutexception": "timeout_error",
    "modelstreamerrorexception": "api_error",
    "modelerrorexception": "api_error",
    "internalserverexception": "api_error",
    "serviceunavailableexception": "overloaded_error",
}


def endpoint(region, environ) -> str:
    """The runtime endpoint: botocore's AWS_ENDPOINT_URL_BEDROCK_RUNTIME / AWS_ENDPOINT_URL
    override, else the region's public one."""
    return (environ.get("AWS_ENDPOINT_URL_BEDROCK_RUNTIME") or environ.get("AWS_ENDPOINT_URL")
            or f"https://bedrock-runtime.{region}.amazonaws.com").rstrip("/")


class BedrockTransport:
    """InvokeModel / InvokeModelWithResponseStream in `region`, signed with `credentials`
    (aws_credentials.AwsCredentialSource or anything with `get()`)."""
    provider = "aws.bedrock"
    stream_types = ("application/vnd.amazon.eventstream",)
    request_id_header = "x-amzn-requestid"

    def __init__(self, *, region, credentials=None, base_url, betas=(), headers=None,
                 bearer=None, clock=None):
        self.region, self.base_url = region, base_url.rstrip("/")
        self._bearer = bearer   # a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK): no SigV4
        self.url = self.base_url
        self._credentials, self._betas, self._clock = credentials, list(betas), clock
        self._custom = dict(headers or {})   # a gateway's own headers: signed with the rest
        self._model = None

    def check(self):
        if not self.base_url.startswith(("http://", "https://")):
            raise ApiError(None, "invalid_url", f"the Bedrock endpoint must start with http://"
                           f" or https:// (got {self.base_url!r})")

    def encode(self, body: dict, stream: bool) -> dict:
        self._model = str(body.get("model") or "")
        out = {k: v for k, v in body.items() if k not in ("model", "stream", "fallbacks")}
        out["anthropic_version"] = gateway.API_VERSION
        if self._betas:
            out["anthropic_beta"] = list(self._betas)
        return out

    def prepare(self, data: bytes, stream: bool):
        from triage_agent.model.aws_credentials import CredentialsError
        action = "invoke-with-response-stream" if stream else "invoke"
        if self._model.partition(";")[0] in ("", ".", ".."):
            raise ApiError(None, "invalid_request", f"model {self._model!r} cannot be a path "
                           "segment")
        url = f"{self.base_url}/model/{urllib.parse.quote(self._model, safe=':;')}/{action}"
        headers = dict(self._custom)
        headers.update({"content-type": "application/json",
                        "accept": self.stream_types[0] if stream else "application/json",
                        "user-agent": gateway.USER_AGENT})
        if self._bearer:
            return url, dict(headers, authorization=f"Bearer {self._bearer}")
        try:
            credentials = self._credentials.get()
        except CredentialsError as exc:
            raise ApiError(None, "authentication_error", f"no AWS credentials: {exc}") from None
        now = self._clock() if self._clock else None
        return url, sigv4.sign("POST", url, headers, data, credentials=credentials,
                               region=self.region, service=SERVICE, now=now)

    def read_stream(self, response, *, on_event=None, on_first_chunk=None) -> dict:
        return read_message(response, on_event=on_event, on_first_chunk=on_first_chunk,
                            explain=self.explain)

    def error_fields(self, status, headers, body):
        code = headers.get("x-amzn-errortype", "").split(":")[0]
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            data = None
        message = (data.get("message") or data.get("Message")) if isinstance(data, dict) \
            else None
        if not code and isinstance(data, dict):
            code = str(data.get("__type") or "").rsplit("#", 1)[-1]
        if not code:
            return gateway.error_fields(status, body)
        message = message or gateway.snippet(body) or "(no message)"
        return ERROR_TYPES.get(code.lower(), f"http_{status}"), self.explain(code, message), None

    def explain(self, code, message) -> str:
        """Bedrock's exception in the operator's words, with what to do for the usual causes."""
        said, low = f"Bedrock {code}: {message}", message.lower()
        advice = None
        if code.lower() == "accessdeniedexception":
            advice = (f"enable access to model {self._model!r} in the Bedrock console of region "
                      f"{self.region} (Model access), and let the role call "
                      "bedrock:InvokeModel and bedrock:InvokeModelWithResponseStream")
        elif code.lower() in ("expiredtokenexception", "unrecognizedclientexception") \
                or "expired" in low:
            advice = ("the AWS credentials are expired or unknown: refresh them (aws sso login, "
                      "a new session token) and run again")
        elif "model identifier is invalid" in low or code.lower() == "resourcenotfoundexception" \
                or "on-demand throughput" in low:
            advice = (f"check the model id {self._model!r}: region {self.region} must offer it "
                      "(some models need an inference profile id such as us.anthropic.claude-... "
                      "or its ARN)")
        return f"{said}; what to do: {advice}" if advice else said


def read_message(response, *, on_event=None, on_first_chunk=None, explain=None) -> dict:
    """A Bedrock response stream into the message dict; sse.StreamError as sse.read_message."""
    decoder, assembler = eventstream.EventStreamDecoder(), sse.MessageAssembler()
    while not assembler.stopped:
        data = response.read1(CHUNK)
        if not data:
            break
        if on_first_chunk is not None:
            on_first_chunk()
            on_first_chunk = None
        try:
            frames = decoder.feed(data)
        except eventstream.FramingError as exc:
            raise sse.StreamError("invalid_response", str(exc)) from None
        for headers, payload in frames:
            for name, text in _events(headers, payload, explain):
                meaning = assembler.apply(name, text)
                if meaning is not None and on_event is not None:
                    on_event(meaning)
            if assembler.stopped:
                break
    return assembler.message()


def _events(headers, payload, explain):
    """The Messages stream events one frame carries (a chunk carries one; others none)."""
    kind = headers.get(":message-type", "event")
    if kind in ("exception", "error"):
        code = headers.get(":exception-type") or headers.get(":error-code") or "UnknownError"
        try:
            message = json.loads(payload.decode("utf-8")).get("message")
        except (UnicodeDecodeError, ValueError, AttributeError):
            message = None
        message = message or headers.get(":error-message") or "(no message)"
        code = code[:1].upper() + code[1:]
        raise sse.StreamError(ERROR_TYPES.get(code.lower(), "api_error"),
                              explain(code, message) if explain else f"{code}: {message}")
    if headers.get(":event-type") != "chunk":
        return []           # initial-response and whatever a newer service adds
    try:
        raw = base64.b64decode(json.loads(payload.decode("utf-8"))["bytes"], validate=True)
        event = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise sse.StreamError("invalid_response", f"a Bedrock chunk that is not a Messages "
                              f"event ({type(exc).__name__}: {exc})") from None
    if not isinstance(event, dict):
        raise sse.StreamError("invalid_response", "a Bedrock chunk that is not a JSON object")
    return [(event.get("type"), json.dumps(event))]
