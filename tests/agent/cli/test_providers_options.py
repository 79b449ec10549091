"""The endpoint options of issue 54 through the real CLI: --provider and what goes with it, the
profile's default and TRIAGE_API_PROFILE, --header and ANTHROPIC_CUSTOM_HEADERS, and every bad
combination a usage error in words (exit 2), with no header value or key ever printed."""

import json
from types import SimpleNamespace

import pytest

from tests.agent.cli.test_cli import run_cli_here
from triage_agent.model import providers
from triage_agent.model.gateway import custom_headers

NO_CLOUD = {"AWS_EC2_METADATA_DISABLED": "true", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}


@pytest.mark.parametrize("flags, env, words", [
    (["--provider", "bedrock"], {}, "--provider bedrock needs --model"),
    (["--provider", "bedrock", "--model", "anthropic.claude-opus-5-5-v1:0"], {},
     "no region; give --region (or AWS_REGION / AWS_DEFAULT_REGION)"),
    (["--provider", "bedrock", "--model", "m", "--region", "us east"], {}, "region 'us east'"),
    (["--provider", "bedrock", "--model", "m", "--region", "us-east-1", "--api-profile",
      "compatible"], {}, "Amazon Bedrock takes the whole request"),
    (["--provider", "vertex"], {"CLOUD_ML_REGION": "us-east5"}, "give --project"),
    (["--provider", "vertex", "--project", "p1"], {}, "give --region (or CLOUD_ML_REGION)"),
    (["--project", "p1"], {}, "--project goes with --provider vertex"),
    (["--region", "us-east-1"], {}, "--region goes with --provider bedrock or vertex"),
    (["--provider", "bedrock", "--vertex-token-command", "x"], {}, "goes with --provider vertex"),
    (["--provider", "bedrock", "--model", "m", "--region", "us-east-1", "--base-url", "ftp://x"],
     {}, "give an http:// or https:// URL"),
    (["--header", "no colon here"], {}, "--header: give 'Name: value'"),
    (["--header", "Authorization: Bearer secret-value-1"], {}, "set by the client itself"),
    (["--header", "X-Bad Name: secret-value-1"], {}, "a header name is one token"),
    ([], {"ANTHROPIC_CUSTOM_HEADERS": "X-Ok: 1\nx-api-key: secret-value-1"},
     "ANTHROPIC_CUSTOM_HEADERS: x-api-key is set by the client itself"),
    ([], {"TRIAGE_API_PROFILE": "openai"}, "TRIAGE_API_PROFILE='openai'"),
    (["--provider", "azure"], {}, "invalid choice: 'azure'"),
])
def test_bad_provider_options_are_usage_errors(tmp_path, flags, env, words):
    out = run_cli_here("pods restart", "--namespaces", "prod", *flags,
                       env=dict(NO_CLOUD, HOME=str(tmp_path), **env))
    assert out.returncode == 2, out.stderr
    assert words in out.stderr and "Traceback" not in out.stderr
    assert "secret-value-1" not in out.stderr


def test_no_aws_credentials_stop_the_run_before_any_model_call(tmp_path):
    out = run_cli_here("pods restart", "--namespaces", "prod", "--json", "--provider", "bedrock",
                       "--model", "anthropic.claude-opus-5-5-v1:0", "--region", "eu-west-1",
                       env=dict(NO_CLOUD, HOME=str(tmp_path)))
    assert out.returncode == 2 and json.loads(out.stdout)["stop"] == "usage_error"
    assert "no AWS credentials found" in out.stderr and "Traceback" not in out.stderr


def test_a_service_account_key_that_cannot_sign_is_a_usage_error_that_never_shows_it(tmp_path):
    key = tmp_path / "sa.json"
    key.write_text(json.dumps({"type": "service_account", "private_key": "PRIVATE-KEY-BYTES",
                               "client_email": "triage@p1.iam.gserviceaccount.com"}))
    out = run_cli_here("pods restart", "--namespaces", "prod", "--provider", "vertex",
                       "--project", "p1", "--region", "global",
                       env=dict(NO_CLOUD, HOME=str(tmp_path),
                                GOOGLE_APPLICATION_CREDENTIALS=str(key)))
    assert out.returncode == 2 and "its private_key cannot be used: no PEM" in out.stderr
    assert "PRIVATE-KEY-BYTES" not in out.stderr


def args(**given):
    base = dict(provider=None, project=None, region=None, vertex_token_command=None, header=[],
                model=None, api_profile=None, base_url=None, replay="r.json", no_fallbacks=False)
    return SimpleNamespace(**dict(base, **given))


@pytest.mark.parametrize("given, env, profile, reason", [
    ({"base_url": "http://gw.internal:8080"}, {}, "anthropic",
     "claude-opus-5-5 is a Claude model id"),
    ({"base_url": "http://127.0.0.1:8080", "model": "qwen3"}, {}, "compatible",
     "qwen3 is not a Claude model id"),
    ({}, {"TRIAGE_API_PROFILE": "compatible"}, "compatible", "TRIAGE_API_PROFILE"),
    ({"api_profile": "anthropic", "model": "qwen3"}, {"TRIAGE_API_PROFILE": "compatible"},
     "anthropic", "--api-profile"),
    ({}, {"ANTHROPIC_BASE_URL": "https://llm-gateway.corp.example"}, "anthropic",
     "claude-opus-5-5 is a Claude model id"),
])
def test_the_profile_and_why(given, env, profile, reason):
    chosen = args(**given)
    providers.settle(chosen, env, default_model="claude-opus-5-5")
    assert (chosen.provider, chosen.api_profile, chosen.profile_reason) == (
        "anthropic", profile, reason)


def test_bedrock_and_vertex_settle_their_region_project_and_endpoint(tmp_path):
    bedrock = args(provider="bedrock", model="m")
    providers.settle(bedrock, {"AWS_DEFAULT_REGION": "eu-central-1", "HOME": str(tmp_path)},
                     default_model="x")
    assert bedrock.base_url == "https://bedrock-runtime.eu-central-1.amazonaws.com"
    assert bedrock.no_fallbacks and bedrock.api_profile == "anthropic"
    moved = args(provider="bedrock", model="m", region="us-west-2")
    providers.settle(moved, {"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "https://vpce.example/",
                             "AWS_ENDPOINT_URL": "https://other.example"}, default_model="x")
    assert (moved.region, moved.base_url) == ("us-west-2", "https://vpce.example")
    google = args(provider="vertex")
    providers.settle(google, {"GOOGLE_CLOUD_PROJECT": "fallback", "ANTHROPIC_VERTEX_PROJECT_ID":
                              "sre-prod", "CLOUD_ML_REGION": "global"}, default_model="x")
    assert (google.project, google.region, google.base_url) == (
        "sre-prod", "global", "https://aiplatform.googleapis.com/v1")


def test_custom_headers_flags_win_over_the_environment_and_keep_their_spelling():
    assert custom_headers(["x-team: b", "X-Extra: c:d"], "X-Team: a\n\nX-Cost: 1\n") == {
        "x-team": "b", "X-Cost": "1", "X-Extra": "c:d"}


def test_the_parsers_provider_choices_are_the_ones_with_names():
    from triage_agent.options import build_parser
    (action,) = [a for a in build_parser()._actions if "--provider" in a.option_strings]
    assert tuple(action.choices) == tuple(providers.SEMCONV_NAMES) == tuple(providers.LABELS)
