"""A whole triage through each enterprise endpoint's fake, streamed and not, on the simulator
with the real MCP server and kubectl: Amazon Bedrock (signed requests checked with botocore,
event-stream answers, credentials from the environment or the container endpoint), Google Vertex
AI (a token from the metadata server or a command), and a gateway in front of the hosted API
with the `anthropic` profile, a bearer token and custom headers. Each run names its provider in
its start lines, cost line, trace and audit, says where its credentials came from, and never
prints a secret. The CLI runs in the test's process (tests/support/cli_here.py)."""

import json
import os
import sys
from pathlib import Path

import pytest

from tests.support.cli_here import run_main_here
from tests.support.fake_endpoints import FakeEndpoints
from tests.support.fake_messages_api import FakeMessagesApi
from tests.support.fake_providers import FakeBedrock, FakeVertex
from tests.support.fake_sts import fake_sts
from tests.support.google_keys import make_key, service_account_file, token_endpoint
from triage_agent.model import gcp_tokens

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "fixtures" / "replay" / "crashloop.json"
SECRET, SESSION = "aws-secret-7f3a9c", "aws-session-token-51de"
BEDROCK_MODEL = "us.anthropic.claude-opus-5-5-v1:0"


def clean_env(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OTEL_", "AWS_", "GOOGLE_", "CLOUD", "GCE_"))}
    return dict(env, HOME=str(tmp_path), CLOUDSDK_CONFIG=str(tmp_path / "no-gcloud"),
                AWS_EC2_METADATA_DISABLED="true")


def triage(sim, tmp_path, env, *args):
    out = run_main_here(["checkout pods restart", "--namespaces", "prod", "--kubeconfig",
                         sim.kubeconfig, "--json", "--no-preflight",
                         "--trace", str(tmp_path / "trace.jsonl"),
                         "--audit-log", str(tmp_path / "audit.jsonl"), *args],
                        env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    outcome = json.loads(out.stdout)
    assert outcome["stop"] == "report"
    return out, outcome


def records(tmp_path):
    read = lambda name: [json.loads(line) for line in  # noqa: E731
                         (tmp_path / name).read_text().splitlines()]
    return read("trace.jsonl"), read("audit.jsonl")


def provider_attributes(spans):
    return {a["value"]["stringValue"] for span in spans for a in span["attributes"]
            if a["key"] == "gen_ai.provider.name"}


def responses():
    return json.loads(FIXTURE.read_text())["responses"]


@pytest.mark.parametrize("stream, source", [(True, "container"), (False, "environment"),
                                            (True, "api-key")])
def test_a_triage_through_bedrock(shared_sim, tmp_path, stream, source):
    env = clean_env(tmp_path)
    creds = {"AccessKeyId": "ASIAPOD", "SecretAccessKey": SECRET, "Token": SESSION,
             "Expiration": "2099-01-01T00:00:00Z"}
    with FakeEndpoints({("GET", "/creds"): (200, {}, creds)}) as box, \
            FakeBedrock(responses(), keys={"ASIAPOD": (SECRET, SESSION)},
                        api_keys={SESSION}) as api:
        if source == "container":
            env["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = box.url + "/creds"
        elif source == "api-key":
            env["AWS_BEARER_TOKEN_BEDROCK"] = SESSION
        else:
            env.update(AWS_ACCESS_KEY_ID="ASIAPOD", AWS_SECRET_ACCESS_KEY=SECRET,
                       AWS_SESSION_TOKEN=SESSION)
        env["AWS_REGION"] = "us-east-1"
        out, outcome = triage(shared_sim("crashloop"), tmp_path, env, "--provider", "bedrock",
                              "--base-url", api.url, "--model", BEDROCK_MODEL,
                              *([] if stream else ["--no-stream"]))
    assert len(api.requests) == len(responses())
    action = "invoke-with-response-stream" if stream else "invoke"
    assert {r["wire_path"] for r in api.requests} == {f"/model/{BEDROCK_MODEL}/{action}"}
    assert all("fallbacks" not in json.loads(r["wire"]) for r in api.requests)
    assert f"model endpoint: Amazon Bedrock, region us-east-1 ({api.url})" in out.stderr
    said = {"container": "from container credentials endpoint", "api-key": "Bedrock API key "
            "(AWS_BEARER_TOKEN_BEDROCK)", "environment": "from environment (AWS_ACCESS_KEY_ID)"}
    assert f"model credentials: AWS, {said[source]}" in out.stderr
    assert f"cost: {BEDROCK_MODEL} on aws.bedrock" in out.stderr and outcome["cost_usd"] > 0
    spans, audit = records(tmp_path)
    assert provider_attributes(spans) == {"aws.bedrock"}
    assert audit and {entry["provider"] for entry in audit} == {"aws.bedrock"}
    for secret in (SECRET, SESSION):
        assert secret not in out.stderr + out.stdout + (tmp_path / "trace.jsonl").read_text()


def test_a_triage_through_bedrock_as_a_profile_s_role(shared_sim, tmp_path):
    """AWS_PROFILE names a profile with role_arn: STS AssumeRole (signature checked with botocore)
    with its source profile's keys, then every Bedrock request signed with the role's."""
    env = clean_env(tmp_path)
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "config").write_text(
        "[profile bedrock-ro]\nrole_arn = arn:aws:iam::123456789012:role/triage-bedrock\n"
        "source_profile = keys\nregion = us-east-1\n"
        "[profile keys]\naws_access_key_id = AKIALAPTOP\naws_secret_access_key = laptop-secret\n")
    with fake_sts({"AKIALAPTOP": ("laptop-secret", None)},
                  {"arn:aws:iam::123456789012:role/triage-bedrock": ("ASIAROLE", SESSION,
                                                                      "2099-01-01T00:00:00Z")},
                  region="us-east-1") as sts, \
            FakeBedrock(responses(), keys={"ASIAROLE": ("ASIAROLE-secret", SESSION)}) as api:
        env.update(AWS_PROFILE="bedrock-ro", AWS_ENDPOINT_URL_STS=sts.url)
        out, _ = triage(shared_sim("crashloop"), tmp_path, env, "--provider", "bedrock",
                        "--base-url", api.url, "--model", BEDROCK_MODEL)
    assert len(sts.requests) == 1 and len(api.requests) == len(responses())
    assert "model endpoint: Amazon Bedrock, region us-east-1" in out.stderr   # the profile's region
    assert ("model credentials: AWS, from assume role arn:aws:iam::123456789012:role/triage-bedrock "
            "(profile bedrock-ro, source_profile keys), STS (temporary") in out.stderr
    assert "laptop-secret" not in out.stderr and "ASIAROLE-secret" not in out.stderr


@pytest.mark.parametrize("stream, source", [(True, "metadata"), (False, "command")])
def test_a_triage_through_vertex(shared_sim, tmp_path, stream, source):
    env = clean_env(tmp_path)
    token = {"access_token": "ya29.fake-token", "expires_in": 3599, "token_type": "Bearer"}
    with FakeEndpoints({("GET", gcp_tokens.TOKEN_PATH): (200, {}, token)}) as meta, \
            FakeVertex(responses()) as api:
        if source == "metadata":
            env["GCE_METADATA_HOST"] = meta.url.split("//", 1)[1]
            how = []
        else:
            how = ["--vertex-token-command", f"{sys.executable} -c \"print('ya29.fake-token')\""]
        env.update(ANTHROPIC_VERTEX_PROJECT_ID="sre-prod", CLOUD_ML_REGION="global")
        out, outcome = triage(shared_sim("crashloop"), tmp_path, env, "--provider", "vertex",
                              "--base-url", api.url + "/v1", *how,
                              *([] if stream else ["--no-stream"]))
    assert len(api.requests) == len(responses())
    assert {(r["project"], r["region"]) for r in api.requests} == {("sre-prod", "global")}
    assert f"model endpoint: Google Vertex AI, project sre-prod, region global" in out.stderr
    said = "the metadata server" if source == "metadata" else "--vertex-token-command"
    assert f"model credentials: Google access token from {said}" in out.stderr
    assert "cost: claude-opus-5-5 on gcp.vertex_ai" in out.stderr
    spans, audit = records(tmp_path)
    assert provider_attributes(spans) == {"gcp.vertex_ai"}
    assert {entry["provider"] for entry in audit} == {"gcp.vertex_ai"}
    assert "ya29.fake-token" not in out.stderr + (tmp_path / "trace.jsonl").read_text()


def test_on_google_cloud_the_metadata_server_names_the_project_too(shared_sim, tmp_path):
    env = clean_env(tmp_path)
    token = {"access_token": "ya29.fake-token", "expires_in": 3599, "token_type": "Bearer"}
    with FakeEndpoints({("GET", gcp_tokens.TOKEN_PATH): (200, {}, token),
                        ("GET", gcp_tokens.PROJECT_PATH): (200, {}, b"sre-from-metadata")}) as meta, \
            FakeVertex(responses()) as api:
        env.update(GCE_METADATA_HOST=meta.url.split("//", 1)[1], CLOUD_ML_REGION="us-east5")
        out, _ = triage(shared_sim("crashloop"), tmp_path, env, "--provider", "vertex",
                        "--base-url", api.url + "/v1")
    assert {(r["project"], r["region"]) for r in api.requests} == {("sre-from-metadata", "us-east5")}
    assert "model endpoint: Google Vertex AI, project sre-from-metadata, region us-east5" in out.stderr
    asked = [r for r in meta.requests if r["path"] == gcp_tokens.PROJECT_PATH]
    assert len(asked) == 1 and asked[0]["headers"]["metadata-flavor"] == "Google"


def test_a_triage_through_vertex_with_a_service_account_key(shared_sim, tmp_path):
    """GOOGLE_APPLICATION_CREDENTIALS names a key file openssl made: the token comes from a JWT
    signed with it (verified by openssl at the fake endpoint), the project from its project_id."""
    env = clean_env(tmp_path)
    pem, public = make_key(tmp_path)
    with token_endpoint(public) as oauth, FakeVertex(responses()) as api:
        api.tokens = {"ya29.from-service-account"}
        key = service_account_file(tmp_path / "sa.json", pem, oauth.url + "/token")
        env.update(GOOGLE_APPLICATION_CREDENTIALS=str(key), CLOUD_ML_REGION="europe-west1")
        out, _ = triage(shared_sim("crashloop"), tmp_path, env, "--provider", "vertex",
                        "--base-url", api.url + "/v1")
    assert {(r["project"], r["region"]) for r in api.requests} == {("sre-keys", "europe-west1")}
    assert len(oauth.requests) == 1   # one token for the whole run
    assert "model credentials: Google access token from service account triage@sre-keys" in out.stderr
    assert "PRIVATE KEY" not in out.stderr + (tmp_path / "trace.jsonl").read_text()


def test_no_project_anywhere_says_what_was_tried(tmp_path):
    env = clean_env(tmp_path)
    with FakeEndpoints({}) as meta:   # a metadata server that knows no project: 404
        env.update(GCE_METADATA_HOST=meta.url.split("//", 1)[1], CLOUD_ML_REGION="us-east5")
        out = run_main_here(["checkout pods restart", "--namespaces", "prod", "--provider", "vertex"],
                            env=env, cwd=ROOT, timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    assert "give --project (or ANTHROPIC_VERTEX_PROJECT_ID / GOOGLE_CLOUD_PROJECT)" in out.stderr
    assert "the metadata server answered HTTP 404" in out.stderr
    adc = tmp_path / "adc.json"   # credentials from a file: the metadata server is not asked
    adc.write_text(json.dumps({"type": "authorized_user", "client_id": "c", "client_secret": "s",
                               "refresh_token": "r"}))
    with pytest.raises(gcp_tokens.TokenError, match="names no project"):
        gcp_tokens.default_project({"GOOGLE_APPLICATION_CREDENTIALS": str(adc), "HOME": str(tmp_path)})


def test_a_triage_through_a_gateway_keeps_the_anthropic_profile(shared_sim, tmp_path):
    env = clean_env(tmp_path)
    env.update(ANTHROPIC_AUTH_TOKEN="gw-bearer-93b1",
               ANTHROPIC_CUSTOM_HEADERS="X-Cost-Center: cc-4411\nX-Team: overridden-value")
    with FakeMessagesApi(responses()) as api:
        out, outcome = triage(shared_sim("crashloop"), tmp_path,
                              dict(env, ANTHROPIC_BASE_URL=api.url),
                              "--header", "X-Team: team-sre-7f3a")
    for request in api.requests:
        headers = {k.lower(): v for k, v in request["headers"].items()}
        assert headers["authorization"] == "Bearer gw-bearer-93b1" and "x-api-key" not in headers
        assert headers["x-team"] == "team-sre-7f3a" and headers["x-cost-center"] == "cc-4411"
        assert request["body"]["fallbacks"] == "default" and "output_config" in request["body"]
        assert isinstance(request["body"]["system"], list)   # cached blocks, not one string
    assert (f"model endpoint {api.url} (not the hosted API): profile anthropic "
            "(claude-opus-5-5 is a Claude model id)") in out.stderr
    assert "custom headers: X-Cost-Center, X-Team" in out.stderr
    for value in ("gw-bearer-93b1", "cc-4411", "team-sre-7f3a"):
        assert value not in out.stderr + out.stdout + (tmp_path / "audit.jsonl").read_text()
    spans, audit = records(tmp_path)
    assert provider_attributes(spans) == {"anthropic"}
