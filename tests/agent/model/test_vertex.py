"""Vertex AI: our requests against the ones the official `anthropic` package's Vertex client sends
to the same fake (tests/support/fake_providers.py), streamed and not, regional and global; access
tokens from the metadata server, a refresh token and a command, each over real HTTP or a real
process, refreshed before they expire; Google's errors in the operator's words."""

import json
import sys

import pytest

from tests.agent.model.test_local import loop_request
from tests.agent.model.test_sse import EVERYTHING
from tests.support.fake_endpoints import FakeEndpoints
from tests.support.fake_messages_api import response, text
from tests.support.fake_providers import FakeVertex
from tests.support.google_keys import make_key, service_account_file, token_endpoint
from triage_agent.model import gcp_tokens, vertex
from triage_agent.model.gcp_tokens import GcpTokenSource, TokenError
from triage_agent.model.messages import ApiError, MessagesClient

TOKEN = "ya29.fake-token"
SMALL = response("end_turn", text("Checked ✓"))
OFFICIAL = pytest.mark.slow(reason="loads the official anthropic package: seconds of CPU")


class Fixed:
    def __init__(self, token=TOKEN):
        self.token = token

    def get(self):
        return self.token


def ours(api, region, *, stream, tokens=None):
    transport = vertex.VertexTransport(project="sre-prod", region=region, tokens=tokens or
                                       Fixed(), base_url=api.url + "/v1")
    return MessagesClient(transport=transport, stream=stream, sleep=lambda s: None,
                          rand=lambda: 0.0)


def official(**options):
    """The official package's Vertex client (imported here: it takes seconds of CPU to load,
    which only these tests should pay)."""
    from anthropic import AnthropicVertex
    return AnthropicVertex(**options)


def theirs(api, region, request, *, stream):
    client = official(region=region, project_id="sre-prod", access_token=TOKEN,
                             base_url=api.url + "/v1", max_retries=0)
    known = ("model", "max_tokens", "messages", "system", "tools", "output_config")
    answer = client.messages.create(**{k: request[k] for k in known if k in request},
                                    **({"stream": True} if stream else {}), extra_body={k: v for k, v in request.items()
                                                               if k not in known})
    if stream:
        for _ in answer:
            pass


@OFFICIAL
@pytest.mark.parametrize("region", ["us-east5", "global"])
@pytest.mark.parametrize("stream", [True, False])
def test_our_request_is_the_official_vertex_clients(region, stream):
    request = dict(loop_request(), model="claude-opus-5-5@20261101")
    request.pop("fallbacks", None)   # not a Vertex feature: the CLI turns fallbacks off
    with FakeVertex([EVERYTHING, EVERYTHING]) as api:
        assert ours(api, region, stream=stream)(request) == EVERYTHING
        theirs(api, region, request, stream=stream)
    mine, sdk = api.requests
    assert mine["wire_path"] == sdk["wire_path"] == (
        f"/v1/projects/sre-prod/locations/{region}/publishers/anthropic/models/"
        f"claude-opus-5-5@20261101:{'streamRawPredict' if stream else 'rawPredict'}")
    assert json.loads(mine["wire"]) == json.loads(sdk["wire"])
    assert json.loads(mine["wire"])["anthropic_version"] == "2026-10-21"
    lower = [{k.lower(): v for k, v in r["headers"].items()} for r in (mine, sdk)]
    for header in ("authorization", "content-type", "anthropic-version"):  # the last: neither
        assert lower[0].get(header) == lower[1].get(header), header


@OFFICIAL
def test_the_default_base_urls_are_the_official_clients():
    for region, url in (("us-east5", "https://us-east5-aiplatform.googleapis.com/v1"),
                        ("global", "https://aiplatform.googleapis.com/v1"),
                        ("eu", "https://aiplatform.eu.rep.googleapis.com/v1")):
        client = official(region=region, project_id="p", access_token="t")
        assert vertex.default_base_url(region) == url == str(client.base_url).rstrip("/")


@pytest.mark.parametrize("status, code, kind, words", [
    (403, "PERMISSION_DENIED", "permission_error", "Model Garden"),
    (404, "NOT_FOUND", "not_found_error", "region us-east5 offers it"),
    (429, "RESOURCE_EXHAUSTED", "rate_limit_error", "quota")])
def test_googles_errors_are_the_apis_types_in_the_operators_words(status, code, kind, words):
    body = [{"error": {"code": status, "message": "nope", "status": code}}]
    with FakeVertex([dict(status=status, body=body)] * 3) as api:
        with pytest.raises(ApiError) as failed:
            ours(api, "us-east5", stream=True)(dict(loop_request(), model="claude-opus-5-5"))
    assert failed.value.error_type == kind and words in failed.value.message
    assert f"Vertex AI {code}: nope" in failed.value.message


def test_a_token_the_fake_does_not_take_is_unauthenticated():
    with FakeVertex([SMALL]) as api:
        with pytest.raises(ApiError) as failed:
            ours(api, "us-east5", stream=False, tokens=Fixed("ya29.stale"))(
                dict(loop_request(), model="claude-opus-5-5"))
    assert failed.value.error_type == "authentication_error" and failed.value.status == 401


class Clock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self):
        return self.now


def test_the_metadata_server_token_is_asked_with_its_header_and_refreshed_before_expiry():
    answers = iter([{"access_token": "ya29.one", "expires_in": 3599, "token_type": "Bearer"},
                    {"access_token": "ya29.two", "expires_in": 3599, "token_type": "Bearer"}])

    def token(record):
        if record["headers"].get("metadata-flavor") != "Google":
            return 403, {}, b"missing Metadata-Flavor"
        return 200, {}, next(answers)
    clock = Clock()
    with FakeEndpoints({("GET", gcp_tokens.TOKEN_PATH): token}) as meta:
        host = meta.url.split("//", 1)[1]
        source = GcpTokenSource(environ={"GCE_METADATA_HOST": host, "HOME": "/nonexistent",
                                         "CLOUDSDK_CONFIG": "/nonexistent"}, clock=clock)
        assert source.get() == "ya29.one" and "metadata server" in source.source
        clock.now += 3599 - gcp_tokens.REFRESH_MARGIN - 1
        assert source.get() == "ya29.one" and meta.count("GET", gcp_tokens.TOKEN_PATH) == 1
        clock.now += 2
        assert source.get() == "ya29.two" and source.refreshes == 1


def test_an_authorized_user_file_is_a_refresh_token_exchange(tmp_path):
    with FakeEndpoints({("POST", "/token"): (200, {}, {"access_token": "ya29.user",
                                                       "expires_in": 3600})}) as oauth:
        adc = tmp_path / "gcloud" / "application_default_credentials.json"
        adc.parent.mkdir()
        adc.write_text(json.dumps({"type": "authorized_user", "client_id": "cid",
                                   "client_secret": "csecret", "refresh_token": "1//refresh",
                                   "token_uri": oauth.url + "/token",
                                   "quota_project_id": "billing-proj"}))
        source = GcpTokenSource(environ={"CLOUDSDK_CONFIG": str(adc.parent)})
        with FakeVertex([SMALL], tokens=["ya29.user"]) as api:
            assert ours(api, "us-east5", stream=False, tokens=source)(
                dict(loop_request(), model="claude-opus-5-5")) == SMALL
        (request,) = oauth.requests
    (sent,) = api.requests
    assert {k.lower(): v for k, v in sent["headers"].items()}["x-goog-user-project"] \
        == "billing-proj"
    form = dict(p.split("=", 1) for p in request["body"].decode().split("&"))
    assert form == {"grant_type": "refresh_token", "client_id": "cid",
                    "client_secret": "csecret", "refresh_token": "1%2F%2Frefresh"}
    assert "gcloud application-default file" in source.source
    assert "1//refresh" not in source.source and "csecret" not in source.source


@pytest.fixture(scope="module")
def google_key(tmp_path_factory):
    return make_key(tmp_path_factory.mktemp("google-key"))


def test_a_service_account_key_signs_its_jwt_and_gets_a_token(tmp_path, google_key):
    pem, public = google_key
    with token_endpoint(public) as endpoint:
        key = service_account_file(tmp_path / "sa.json", pem, endpoint.url + "/token")
        source = GcpTokenSource(environ={"GOOGLE_APPLICATION_CREDENTIALS": str(key)}, clock=lambda: 1_800_000_000)
        assert source.get() == "ya29.from-service-account"
    header, claims = endpoint.requests[0]["jwt"]
    assert header == {"alg": "RS256", "typ": "JWT", "kid": "kid-1"}
    assert claims == {"iss": "triage@sre-keys.iam.gserviceaccount.com", "aud": endpoint.url + "/token",
                      "scope": "https://www.googleapis.com/auth/cloud-platform",
                      "iat": 1_800_000_000, "exp": 1_800_003_600}
    assert source.source == f"service account triage@sre-keys.iam.gserviceaccount.com (GOOGLE_APPLICATION_CREDENTIALS {key})"
    assert gcp_tokens.default_project({"GOOGLE_APPLICATION_CREDENTIALS": str(key)}) == "sre-keys"


def test_a_signature_the_endpoint_cannot_verify_is_refused(tmp_path, google_key):
    other, _ = make_key(tmp_path)   # a key that is not the one the endpoint knows
    with token_endpoint(google_key[1]) as endpoint:
        key = service_account_file(tmp_path / "sa.json", other, endpoint.url + "/token")
        with pytest.raises(TokenError, match="HTTP 400.*Invalid JWT Signature"):
            GcpTokenSource(environ={"GOOGLE_APPLICATION_CREDENTIALS": str(key)}).get()


@pytest.mark.parametrize("private_key, words", [
    ("-----BEGIN...", "no PEM 'PRIVATE KEY' block"),
    ("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----", "its private_key cannot be used: the key's DER"),
    (None, "no PEM")])
def test_a_service_account_key_that_cannot_sign_says_why_and_never_shows_the_key(tmp_path, private_key, words):
    key = tmp_path / "sa.json"
    key.write_text(json.dumps({"type": "service_account", "private_key": private_key,
                               "client_email": "x@y.iam.gserviceaccount.com"}))
    with pytest.raises(TokenError) as failed:
        GcpTokenSource(environ={"GOOGLE_APPLICATION_CREDENTIALS": str(key)}).get()
    assert words in str(failed.value) and "bm90" not in str(failed.value)


def test_the_token_command_is_run_again_before_its_token_would_expire(tmp_path):
    counter = tmp_path / "n"
    script = tmp_path / "token.py"
    script.write_text(f"import pathlib; p = pathlib.Path({str(counter)!r}); "
                      "n = int(p.read_text()) + 1 if p.exists() else 1; p.write_text(str(n)); "
                      "print(f'ya29.cmd-{n}')")
    clock = Clock()
    source = GcpTokenSource(command=f"{sys.executable} {script}", environ={}, clock=clock)
    assert source.get() == "ya29.cmd-1" and source.get() == "ya29.cmd-1"
    clock.now += gcp_tokens.COMMAND_TOKEN_TTL + 1
    assert source.get() == "ya29.cmd-2"
    failing = GcpTokenSource(command=f"{sys.executable} -c 'import sys; sys.exit(3)'",
                             environ={})
    with pytest.raises(TokenError, match="exited 3"):
        failing.get()


def test_a_command_that_is_not_one_or_an_odd_lifetime_is_said_or_survived():
    with pytest.raises(TokenError, match="not a command"):
        GcpTokenSource(command="gcloud 'unclosed", environ={}).get()
    with FakeEndpoints({("GET", gcp_tokens.TOKEN_PATH): (200, {}, {
            "access_token": "ya29.x", "expires_in": "soon"})}) as meta:
        source = GcpTokenSource(environ={"GCE_METADATA_HOST": meta.url.split("//", 1)[1],
                                         "CLOUDSDK_CONFIG": "/nonexistent"})
        assert source.get() == "ya29.x"
