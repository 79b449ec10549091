"""Fakes of Amazon Bedrock's and Google Vertex AI's Claude endpoints, on the fake Messages API.

FakeBedrock serves `POST /model/MODEL/invoke[-with-response-stream]`. Each request's bearer
token must be one of its `api_keys`, or its SigV4 signature is checked with botocore's own signer against the fake's known keys (a wrong or stale
one is a 403 InvalidSignatureException / ExpiredTokenException, as Bedrock words them); its body
must carry anthropic_version and no model or stream; with the model put back from the path it is
checked and answered by FakeMessagesApi's rules and script. A streamed answer is AWS event-stream
framing: one `chunk` frame per Messages event (payload {"bytes": base64, "p": padding}); every
frame is first parsed by botocore's EventStreamBuffer and its Bedrock response-stream parser, the
ones the official `anthropic` package uses, so the fake sends only what they accept. A script
item's `"bedrock": {...}` changes the stream: `split` (byte piece sizes), `after` + `exception`
(+ `message`: an exception frame after that many events), `corrupt` (flip a byte of that frame).

FakeVertex serves `POST /v1/projects/P/locations/R/publishers/anthropic/models/MODEL:rawPredict`
(and `:streamRawPredict`, server-sent events as the hosted API sends them), accepting only the
bearer tokens in `.tokens`; a bad one is Google's 401 UNAUTHENTICATED.
botocore is imported where it is used: a collection of the tests loads none of it.
"""

import base64
import datetime
import json
import re
import urllib.parse

from tests.support import fake_sse
from tests.support.fake_messages_api import FakeMessagesApi
from triage_agent.model import eventstream

BEDROCK_PATH = re.compile(r"/model/(?P<model>[^/]+)/(?P<action>invoke|invoke-with-response-stream)")
VERTEX_PATH = re.compile(r"/v1/projects/(?P<project>[^/]+)/locations/(?P<region>[^/]+)/publishers/"
                         r"anthropic/models/(?P<model>[^/:]+):(?P<action>rawPredict|streamRawPredict)")
API_VERSION = "2026-10-21"
_SHAPE = []


def response_stream_shape():
    """botocore's ResponseStream shape of bedrock-runtime (what the official client parses)."""
    from botocore.loaders import Loader
    from botocore.model import ServiceModel
    if not _SHAPE:
        model = ServiceModel(Loader().load_service_model("bedrock-runtime", "service-2"))
        _SHAPE.append(model.shape_for("ResponseStream"))
    return _SHAPE[0]


def botocore_reads(frame: bytes) -> dict:
    """The frame as botocore's parser reads it ({"chunk": {"bytes": ...}}, or for an exception
    {"Error": {"Code", "Message"}})."""
    from botocore.eventstream import EventStreamBuffer
    from botocore.parsers import EventStreamJSONParser
    buffer = EventStreamBuffer()
    buffer.add_data(frame)
    (message,) = list(buffer)
    return EventStreamJSONParser().parse(message.to_response_dict(), response_stream_shape())


def chunk_frame(event: dict) -> bytes:
    data = json.dumps(event, ensure_ascii=False).encode()
    payload = json.dumps({"bytes": base64.b64encode(data).decode(), "p": "abcdefgh"}).encode()
    frame = eventstream.encode_message({":event-type": "chunk", ":content-type":
                                        "application/json", ":message-type": "event"}, payload)
    assert botocore_reads(frame)["chunk"]["bytes"] == data   # the fake proves itself
    return frame


def exception_frame(name, message) -> bytes:
    frame = eventstream.encode_message({":exception-type": name, ":content-type":
                                        "application/json", ":message-type": "exception"},
                                       json.dumps({"message": message}).encode())
    assert botocore_reads(frame) == {"Error": {"Code": name, "Message": message}}
    return frame


class FakeBedrock(FakeMessagesApi):
    """`.url` is the endpoint (--base-url); `.keys` {access key: (secret, token)} it accepts."""

    def __init__(self, script, *, keys, region="us-east-1", api_keys=(), **options):
        super().__init__(script, **options)
        self.keys, self.region = dict(keys), region
        self.api_keys = set(api_keys)   # Bedrock API keys it takes as bearer tokens
        self.frames = []   # every frame sent, as botocore read it

    def handle(self, handler):
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length)
        headers = dict(handler.headers)
        found = BEDROCK_PATH.fullmatch(handler.path)
        problem = self.signature_problem(handler.command, handler.path, headers, raw)
        if problem:
            return self._aws(handler, 403, problem[0], problem[1])
        if not found:
            return self._aws(handler, 404, "UnknownOperationException", "no such operation")
        body = json.loads(raw)
        if "model" in body or "stream" in body or body.get("anthropic_version") != API_VERSION:
            return self._aws(handler, 400, "ValidationException",
                             f"malformed input request: {sorted(body)}")
        model = urllib.parse.unquote(found["model"])
        stream = found["action"] == "invoke-with-response-stream"
        full = dict({"model": model}, **{k: v for k, v in body.items()
                                          if k not in ("anthropic_version", "anthropic_beta")})
        if stream:
            full["stream"] = True
        self.answer(handler, "/v1/messages", headers, json.dumps(full).encode(), wire=raw,
                    wire_path=handler.path)

    def signature_problem(self, method, path, headers, raw):
        """(exception, message) when the request is not signed as botocore would sign it."""
        from botocore import auth as botocore_auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials as BotoCredentials
        lower = {k.lower(): v for k, v in headers.items()}
        said = lower.get("authorization", "")
        if said.startswith("Bearer "):
            return None if said[7:] in self.api_keys else (
                "UnrecognizedClientException", "Invalid API key")
        access = re.search(r"Credential=([^/]+)/", said)
        if not access or access.group(1) not in self.keys:
            return "UnrecognizedClientException", "The security token included in the " \
                "request is invalid."
        secret, token = self.keys[access.group(1)]
        if token != lower.get("x-amz-security-token"):
            return "ExpiredTokenException", "The security token included in the request is " \
                "expired"
        signed = re.search(r"SignedHeaders=([^,]+)", said).group(1).split(";")
        url = f"http://{lower['host']}{path}"
        request = AWSRequest(method=method, url=url, data=raw,
                             headers={k: v for k, v in lower.items() if k in signed})
        when = datetime.datetime.strptime(lower["x-amz-date"], "%Y%m%dT%H%M%SZ")
        original = botocore_auth.get_current_datetime
        botocore_auth.get_current_datetime = lambda: when
        try:
            botocore_auth.SigV4Auth(BotoCredentials(access.group(1), secret, token), "bedrock",
                                    self.region).add_auth(request)
        finally:
            botocore_auth.get_current_datetime = original
        if request.headers["Authorization"] != said:
            return "InvalidSignatureException", "The request signature we calculated does " \
                "not match the signature you provided."
        return None

    def _aws(self, handler, status, name, message):
        self._send(handler, status, {"message": message},
                   {"x-amzn-ErrorType": f"{name}:http://internal.amazon.com/coral/",
                    "x-amzn-RequestId": "fake-aws-request"})

    def error(self, handler, status, error_type, message, rid):
        name = {400: "ValidationException", 404: "ResourceNotFoundException"}.get(
            status, "InternalServerException")
        self._aws(handler, status, name, message)

    def stream(self, handler, item, rid):
        how = item.get("bedrock", {})
        events = fake_sse.events_for(item["body"])
        frames = [chunk_frame(data) for _, data in events]
        if "exception" in how:
            frames = frames[:how.get("after", 0)] + [
                exception_frame(how["exception"], how.get("message", "try again"))]
        if "corrupt" in how:
            at = how["corrupt"]
            frames[at] = frames[at][:-6] + bytes([frames[at][-6] ^ 0xFF]) + frames[at][-5:]
        self.frames.extend(frames)
        pieces = fake_sse.cut(b"".join(frames), how.get("split") or 1 << 20)
        handler.protocol_version = "HTTP/1.1"
        handler.close_connection = True
        handler.send_response(200)
        for name, value in (("content-type", "application/vnd.amazon.eventstream"),
                            ("transfer-encoding", "chunked"), ("x-amzn-RequestId", rid)):
            handler.send_header(name, value)
        handler.end_headers()
        for piece in pieces:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.write(b"0\r\n\r\n")


class FakeVertex(FakeMessagesApi):
    """`.url` + "/v1" is the base URL; `.tokens` the bearer tokens it takes."""

    def __init__(self, script, *, tokens=("ya29.fake-token",), **options):
        super().__init__(script, **options)
        self.tokens = set(tokens)

    def handle(self, handler):
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length)
        headers = dict(handler.headers)
        said = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
        if not said.startswith("Bearer ") or said[7:] not in self.tokens:
            return self._google(handler, 401, "UNAUTHENTICATED", "Request had invalid "
                                "authentication credentials.")
        found = VERTEX_PATH.fullmatch(handler.path.split("?")[0])
        if not found:
            return self._google(handler, 404, "NOT_FOUND", f"no such path {handler.path}")
        body = json.loads(raw)
        stream = found["action"] == "streamRawPredict"
        if "model" in body or body.get("anthropic_version") != API_VERSION \
                or bool(body.get("stream")) != stream:
            return self._google(handler, 400, "INVALID_ARGUMENT", f"bad body: {sorted(body)}")
        full = dict({"model": urllib.parse.unquote(found["model"])},
                    **{k: v for k, v in body.items() if k != "anthropic_version"})
        self.answer(handler, "/v1/messages", headers, json.dumps(full).encode(), wire=raw,
                    wire_path=handler.path, project=found["project"], region=found["region"])

    def _google(self, handler, status, code, message):
        self._send(handler, status, {"error": {"code": status, "message": message,
                                               "status": code}})
