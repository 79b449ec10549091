"""The Messages client through Amazon Bedrock's fake (tests/support/fake_providers.py), over real
HTTP: signed requests botocore's signer agrees with, the body the official client sends, event
streams in any pieces equal to the plain answer, and every failure on the client's retry and exit
rules: corrupt frames, exception frames, Bedrock's HTTP errors in the operator's words; and our
request against the official anthropic package's Bedrock client's on the same fake."""

import json

import pytest

from tests.agent.model.test_sse import EVERYTHING
from tests.support.fake_messages_api import response, text
from tests.support.fake_providers import FakeBedrock, botocore_reads, chunk_frame
from triage_agent.model import bedrock, eventstream, sse
from triage_agent.model.aws_credentials import AwsCredentialSource
from triage_agent.model.bedrock import BedrockTransport
from triage_agent.model.messages import ApiError, MessagesClient

KEY, SECRET, TOKEN = "ASIAFAKEKEY", "fake/secret+key", "session-token"
ENV = {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SESSION_TOKEN": TOKEN}
MODEL = "us.anthropic.claude-opus-5-5-v1:0"
BEDROCK_ARN = ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/"
               "us.anthropic.claude-opus-5-5-v1:0")
REQUEST = {"model": MODEL, "max_tokens": 64, "output_config": {"effort": "medium"},
           "messages": [{"role": "user", "content": [{"type": "text", "text": "héllo"}]}]}
SMALL = response("end_turn", text("Checked ✓"))


def client_for(fake, *, stream=True, env=ENV, **options):
    seen = {"sleeps": [], "retries": []}
    transport = BedrockTransport(region="us-east-1", credentials=AwsCredentialSource(env),
                                 base_url=fake.url, **options)
    client = MessagesClient(transport=transport, stream=stream, rand=lambda: 0.0,
                            sleep=seen["sleeps"].append,
                            on_retry=lambda n, delay, error: seen["retries"].append(error))
    return client, seen


def fake(script, **options):
    return FakeBedrock(script, keys={KEY: (SECRET, TOKEN)}, **options)


def test_streamed_and_plain_answers_are_the_message_and_the_body_is_the_official_clients():
    with fake([EVERYTHING, EVERYTHING]) as api:
        streamed, seen = client_for(api)
        plain, _ = client_for(api, stream=False)
        assert streamed(REQUEST) == EVERYTHING == plain(REQUEST)
    first, second = api.requests
    assert first["wire_path"] == f"/model/{MODEL}/invoke-with-response-stream"
    assert second["wire_path"] == f"/model/{MODEL}/invoke"
    for sent in (first, second):
        body = json.loads(sent["wire"])
        assert body == dict({k: v for k, v in REQUEST.items() if k != "model"},
                            anthropic_version="2026-10-21")
        assert "anthropic_beta" not in body
    assert streamed.last_request_id == "req_fake_001" and seen["sleeps"] == []
    assert {"chunk"} == {key for frame in api.frames for key in botocore_reads(frame)}


def test_an_inference_profile_arn_is_one_path_segment_and_betas_go_in_the_body():
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-5-5-v1:0"
    with fake([SMALL]) as api:
        client, _ = client_for(api, betas=["context-1m-2025-08-07"])
        assert client(dict(REQUEST, model=arn)) == SMALL
    (sent,) = api.requests
    assert sent["wire_path"] == ("/model/arn:aws:bedrock:us-east-1:123456789012:"
                                 "inference-profile%2Fus.anthropic.claude-opus-5-5-v1:0"
                                 "/invoke-with-response-stream")
    assert json.loads(sent["wire"])["anthropic_beta"] == ["context-1m-2025-08-07"]
    assert sent["body"]["model"] == arn


@pytest.mark.parametrize("split", [1, 7, [3, 1, 40], 5000])
def test_frames_split_anywhere_give_the_same_message(split):
    with fake([dict(status=200, body=EVERYTHING, bedrock={"split": split})]) as api:
        client, _ = client_for(api)
        assert client(REQUEST) == EVERYTHING


def test_a_corrupt_frame_is_a_broken_stream_retried_and_the_retry_succeeds():
    with fake([dict(status=200, body=SMALL, bedrock={"corrupt": 2}), SMALL]) as api:
        client, seen = client_for(api)
        assert client(REQUEST) == SMALL
    (error,) = seen["retries"]
    assert error.error_type == "invalid_response" and "CRC mismatch" in error.message
    assert len(api.requests) == 2


@pytest.mark.parametrize("exception, kind", [
    ("throttlingException", "rate_limit_error"), ("modelStreamErrorException", "api_error"),
    ("serviceUnavailableException", "overloaded_error"),
    ("internalServerException", "api_error")])
def test_a_retryable_exception_frame_mid_stream_is_retried(exception, kind):
    with fake([dict(status=200, body=SMALL, bedrock={"after": 3, "exception": exception}),
               SMALL]) as api:
        client, seen = client_for(api)
        assert client(REQUEST) == SMALL
    (error,) = seen["retries"]
    assert error.error_type == kind and exception[0].upper() + exception[1:] in error.message
    assert error.status == 200 and seen["sleeps"] == [0.5]


def test_a_validation_exception_frame_ends_the_call_without_a_retry():
    with fake([dict(status=200, body=SMALL, bedrock={"after": 1, "exception":
                                                     "validationException",
                                                     "message": "bad max_tokens"})]) as api:
        client, seen = client_for(api)
        with pytest.raises(ApiError) as failed:
            client(REQUEST)
    assert failed.value.error_type == "invalid_request_error" and seen["retries"] == []
    assert "ValidationException: bad max_tokens" in failed.value.message


@pytest.mark.parametrize("status, name, message, kind, words, tries", [
    (403, "AccessDeniedException", "You don't have access to the model with the specified "
     "model ID.", "permission_error", "enable access to model", 1),
    (400, "ValidationException", "The provided model identifier is invalid.",
     "invalid_request_error", "region us-east-1 must offer it", 1),
    (429, "ThrottlingException", "Too many requests, please wait before trying again.",
     "rate_limit_error", "Bedrock ThrottlingException", 3),
    (503, "ServiceUnavailableException", "Service unavailable", "overloaded_error",
     "ServiceUnavailableException", 3)])
def test_bedrocks_http_errors_are_the_apis_types_in_the_operators_words(status, name, message,
                                                                        kind, words, tries):
    item = dict(status=status, body={"message": message},
                headers={"x-amzn-ErrorType": f"{name}:http://internal.amazon.com/coral/",
                         "x-amzn-RequestId": "aws-req-1"})
    with fake([item] * 3) as api:
        client, seen = client_for(api)
        with pytest.raises(ApiError) as failed:
            client(REQUEST)
    error = failed.value
    assert (error.status, error.error_type, error.request_id) == (status, kind, "aws-req-1")
    assert words in error.message and message in error.message and len(api.requests) == tries


def test_unknown_or_expired_credentials_are_refused_and_said_so():
    with fake([SMALL, SMALL]) as api:
        wrong, _ = client_for(api, env=dict(ENV, AWS_ACCESS_KEY_ID="AKIAUNKNOWN"))
        stale, _ = client_for(api, env=dict(ENV, AWS_SESSION_TOKEN="an-old-token"))
        for client, name in ((wrong, "UnrecognizedClientException"),
                             (stale, "ExpiredTokenException")):
            with pytest.raises(ApiError) as failed:
                client(REQUEST)
            assert failed.value.error_type == "authentication_error"
            assert name in failed.value.message and "refresh them" in failed.value.message


def test_a_bad_signature_is_refused_by_the_fake():
    """The fake's check is real: a request signed with another secret is a 403."""
    with FakeBedrock([SMALL], keys={KEY: ("another-secret", TOKEN)}) as api:
        client, _ = client_for(api)
        with pytest.raises(ApiError) as failed:
            client(REQUEST)
    assert "InvalidSignatureException" in failed.value.message


def test_the_decoder_reads_botocore_accepted_frames_and_refuses_broken_ones():
    frame = eventstream.encode_message({":message-type": "event", ":event-type": "chunk",
                                        "flag": True}, b'{"bytes": ""}')
    decoder = eventstream.EventStreamDecoder()
    assert [m for b in frame for m in decoder.feed(bytes([b]))] == [
        ({":message-type": "event", ":event-type": "chunk", "flag": True}, b'{"bytes": ""}')]
    assert decoder.pending == 0
    for broken, why in ((frame[:8] + b"\0\0\0\0" + frame[12:], "prelude CRC"),
                        (frame[:-1] + bytes([frame[-1] ^ 1]), "message CRC"),
                        (b"\0\0\0\x05\0\0\0\0" + b"\0" * 8, "prelude CRC")):
        with pytest.raises(eventstream.FramingError, match=why):
            eventstream.EventStreamDecoder().feed(broken)


class Cut:
    """A response whose bytes end where the test says (read1 as http.client's)."""

    def __init__(self, data):
        self.data = data

    def read1(self, size):
        data, self.data = self.data[:size], self.data[size:]
        return data


def test_a_stream_that_ends_between_frames_or_inside_one_is_incomplete():
    start = {"type": "message_start", "message": dict(SMALL, content=[], stop_reason=None)}
    frame = chunk_frame(start)
    for data, kind in ((frame, "incomplete_stream"), (frame + frame[:20], "incomplete_stream")):
        with pytest.raises(sse.StreamError) as failed:
            bedrock.read_message(Cut(data))
        assert failed.value.error_type == kind


def test_credentials_about_to_expire_are_fetched_again_between_calls():
    """The transport asks its credential source on every attempt: once the container's
    credentials are within the refresh margin, the next call is signed with the new ones."""
    from tests.support.fake_endpoints import FakeEndpoints
    from triage_agent.model.aws_credentials import REFRESH_MARGIN
    served = iter([("ASIAOLD", "old-token"), ("ASIANEW", "new-token")])

    def answer(record):
        key, token = next(served)
        return 200, {}, {"AccessKeyId": key, "SecretAccessKey": SECRET, "Token": token,
                         "Expiration": "2026-12-07T13:00:00Z"}
    now = {"t": 1796648400.0 - 3600}
    with FakeEndpoints({("GET", "/creds"): answer}) as box, \
            FakeBedrock([SMALL, SMALL], keys={"ASIAOLD": (SECRET, "old-token"),
                                              "ASIANEW": (SECRET, "new-token")}) as api:
        source = AwsCredentialSource({"AWS_CONTAINER_CREDENTIALS_FULL_URI": box.url + "/creds",
                                      "AWS_EC2_METADATA_DISABLED": "true"},
                                     clock=lambda: now["t"])
        client = MessagesClient(transport=BedrockTransport(
            region="us-east-1", credentials=source, base_url=api.url), stream=True)
        assert client(REQUEST) == SMALL
        now["t"] = 1796648400.0 - REFRESH_MARGIN + 1
        assert client(REQUEST) == SMALL
    signed = [r["headers"]["Authorization"].split("Credential=")[1].split("/")[0]
              for r in api.requests]
    assert signed == ["ASIAOLD", "ASIANEW"] and source.refreshes == 1


def test_an_error_message_frame_is_a_stream_error_in_words():
    frame = eventstream.encode_message({":message-type": "error", ":error-code":
                                        "InternalFailure", ":error-message": "boom"}, b"")
    with pytest.raises(sse.StreamError) as failed:
        bedrock.read_message(Cut(frame))
    assert failed.value.error_type == "api_error" and "InternalFailure: boom" in str(
        failed.value.message)


def test_a_bedrock_api_key_is_a_bearer_token_and_nothing_is_signed():
    with FakeBedrock([SMALL], keys={}, api_keys={"bedrock-api-key-1"}) as api:
        client = MessagesClient(transport=BedrockTransport(
            region="us-east-1", base_url=api.url, bearer="bedrock-api-key-1"), stream=True)
        assert client(REQUEST) == SMALL
    headers = {k.lower(): v for k, v in api.requests[0]["headers"].items()}
    assert headers["authorization"] == "Bearer bedrock-api-key-1"
    assert "x-amz-date" not in headers and "x-amz-security-token" not in headers


OFFICIAL = pytest.mark.slow(reason="loads the official anthropic package: seconds of CPU")


@OFFICIAL
@pytest.mark.parametrize("stream", [True, False])
def test_our_request_is_the_official_bedrock_clients(stream):
    """The official package's Bedrock client signs with boto3 (not installed here) unless it
    has a Bedrock API key: with one, both clients send the same path, body and bearer header
    to the same fake."""
    from anthropic import AnthropicBedrock
    from tests.agent.model.test_local import loop_request
    request = dict(loop_request(), model=BEDROCK_ARN)
    request.pop("fallbacks", None)
    with FakeBedrock([SMALL, SMALL], keys={}, api_keys={"bedrock-api-key-1"}) as api:
        ours = MessagesClient(transport=BedrockTransport(
            region="us-east-1", base_url=api.url, bearer="bedrock-api-key-1"), stream=stream)
        assert ours(request) == SMALL
        theirs = AnthropicBedrock(api_key="bedrock-api-key-1", aws_region="us-east-1",
                                  base_url=api.url, max_retries=0)
        known = ("model", "max_tokens", "messages", "system", "tools", "output_config")
        answer = theirs.messages.create(**{k: request[k] for k in known},
                                        **({"stream": True} if stream else {}))
        for _ in (answer if stream else ()):
            pass
    mine, sdk = api.requests
    assert mine["wire_path"] == sdk["wire_path"]
    assert json.loads(mine["wire"]) == json.loads(sdk["wire"])
    assert mine["headers"]["Authorization"] == {k.title(): v for k, v in
                                                sdk["headers"].items()}["Authorization"]
