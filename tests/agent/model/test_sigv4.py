"""SigV4: our signatures against botocore's own signer (SigV4Auth) on the same requests, same
credentials and the same instant: paths with encoded model ids and ARNs, query strings, ports,
session tokens, headers a proxy may change, empty and non-ASCII bodies."""

import datetime

import pytest

from triage_agent.model import sigv4
from triage_agent.model.aws_credentials import Credentials

NOW = datetime.datetime(2026, 12, 7, 12, 30, 45, tzinfo=datetime.timezone.utc)
KEYS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
TEMPORARY = Credentials("ASIAEXAMPLE", "c2VjcmV0L3NlY3JldA==", token="FwoGZXIvYXdzE//token+/=")
BASE = "https://bedrock-runtime.us-east-1.amazonaws.com"

CASES = [
    ("POST", f"{BASE}/model/anthropic.claude-opus-4-5-20251101-v1:0/invoke",
     {"content-type": "application/json", "accept": "application/json"}, b'{"a": 1}'),
    ("POST", f"{BASE}/model/us.anthropic.claude-opus-5-5-v1:0/invoke-with-response-stream",
     {"content-type": "application/json", "accept": "application/vnd.amazon.eventstream",
      "user-agent": "triage-agent/0.1", "x-amzn-trace-id": "Root=1-abc"},
     '{"text": "héllo ✓"}'.encode()),
    ("POST", f"{BASE}/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile"
     "%2Fus.anthropic.claude-opus-5-5-v1%3A0/invoke",
     {"content-type": "application/json", "X-Gateway-Team": "  sre   on-call "}, b"{}"),
    ("POST", "http://127.0.0.1:8443/model/m/invoke", {"content-type": "application/json"}, b""),
    ("GET", "https://sts.eu-west-1.amazonaws.com/?Version=2011-06-15&Action=GetCallerIdentity"
     "&Z=a%20b&empty=", {}, b""),
    ("POST", "https://vpce-0abc.bedrock-runtime.us-west-2.vpce.amazonaws.com:443/model/m/invoke",
     {"content-type": "application/json", "connection": "keep-alive"}, b"{}"),
]


def botocore_headers(method, url, headers, body, credentials, region):
    """botocore's signature of the same request at NOW (its clock read is the only stand-in;
    imported here so that collecting the tests loads no botocore)."""
    from botocore import auth as botocore_auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotoCredentials
    request = AWSRequest(method=method, url=url, headers=dict(headers), data=body)
    boto = BotoCredentials(credentials.access_key, credentials.secret_key, credentials.token)
    original = botocore_auth.get_current_datetime
    botocore_auth.get_current_datetime = lambda: NOW.replace(tzinfo=None)
    try:
        botocore_auth.SigV4Auth(boto, "bedrock", region).add_auth(request)
    finally:
        botocore_auth.get_current_datetime = original
    return {k.lower(): v for k, v in request.headers.items()}


@pytest.mark.parametrize("credentials", [KEYS, TEMPORARY], ids=["keys", "session-token"])
@pytest.mark.parametrize("method, url, headers, body", CASES)
def test_our_signature_is_botocores(method, url, headers, body, credentials):
    region = "eu-west-1" if "eu-west-1" in url else "us-east-1"
    ours = sigv4.sign(method, url, headers, body, credentials=credentials, region=region,
                      service="bedrock", now=NOW)
    theirs = botocore_headers(method, url, headers, body, credentials, region)
    assert ours["authorization"] == theirs["authorization"]
    assert ours["x-amz-date"] == theirs["x-amz-date"] == "20261207T123045Z"
    assert ours.get("x-amz-security-token") == theirs.get("x-amz-security-token") \
        == credentials.token


def test_a_changed_body_header_or_instant_changes_the_signature():
    method, url, headers, body = CASES[0]
    first = sigv4.sign(method, url, headers, body, credentials=KEYS, region="us-east-1",
                       service="bedrock", now=NOW)["authorization"]
    for changed in (dict(body=b'{"a": 2}'), dict(headers={"content-type": "text/plain"}),
                    dict(now=NOW + datetime.timedelta(seconds=1)), dict(region="us-west-2")):
        options = {**dict(body=body, headers=headers, now=NOW, region="us-east-1"), **changed}
        again = sigv4.sign(method, url, options["headers"], options["body"], credentials=KEYS,
                           region=options["region"], service="bedrock", now=options["now"])
        assert again["authorization"] != first, changed


def test_the_secret_is_never_in_the_headers_or_the_credentials_repr():
    signed = sigv4.sign(*CASES[0], credentials=TEMPORARY, region="us-east-1",
                        service="bedrock", now=NOW)
    assert TEMPORARY.secret_key not in repr(signed) and TEMPORARY.secret_key not in repr(TEMPORARY)
    assert "AKIDEXAMPLE" not in repr(KEYS)
