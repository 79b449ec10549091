"""The AWS credential chain against fakes of each source over real HTTP (STS's XML, the container
endpoint with its authorization token, IMDSv2's token then credentials), real files and a real
credential_process: each source, the chain's order, refresh before expiry, and the errors."""

import json
import sys

import pytest

from tests.support.fake_endpoints import FakeEndpoints
from tests.support.fake_sts import fake_sts
from triage_agent.model import aws_credentials as chain
from triage_agent.model.aws_credentials import AwsCredentialSource, CredentialsError

CLOSED = "http://127.0.0.1:9"   # nothing listens: an unreachable endpoint
NO_IMDS = {"AWS_EC2_METADATA_SERVICE_ENDPOINT": CLOSED}
STATIC = {"AWS_ACCESS_KEY_ID": "AKIAENV", "AWS_SECRET_ACCESS_KEY": "env-secret"}
EXPIRY = "2026-12-07T13:00:00Z"
EXPIRY_TS = 1796648400.0
STS_XML = f"""<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials><AccessKeyId>ASIASTS</AccessKeyId><SecretAccessKey>sts-secret</SecretAccessKey>
      <SessionToken>sts-token</SessionToken><Expiration>{EXPIRY}</Expiration></Credentials>
  </AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>""".encode()


def creds(key, token, expiry=EXPIRY):
    return {"AccessKeyId": key, "SecretAccessKey": key + "-secret", "Token": token,
            "Expiration": expiry}


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty home: no ~/.aws files unless a test writes them."""
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def web_identity_env(tmp_path, sts):
    (tmp_path / "token").write_text("eyJ.web.identity\n")
    return {"AWS_WEB_IDENTITY_TOKEN_FILE": str(tmp_path / "token"),
            "AWS_ROLE_ARN": "arn:aws:iam::123456789012:role/triage", "AWS_ENDPOINT_URL_STS":
            sts.url, "AWS_ROLE_SESSION_NAME": "triage-test", **NO_IMDS}


def test_the_environment_comes_first(home, tmp_path):
    with FakeEndpoints({("GET", "/"): (200, {}, STS_XML)}) as sts:
        env = dict(web_identity_env(tmp_path, sts), **STATIC, AWS_SESSION_TOKEN="t")
        found = AwsCredentialSource(env).get()
    assert (found.access_key, found.token, found.expiry) == ("AKIAENV", "t", None)
    assert found.source == "environment (AWS_ACCESS_KEY_ID)" and sts.requests == []


def test_half_a_key_in_the_environment_is_an_error_not_a_fall_through(home):
    with pytest.raises(CredentialsError, match="must both be set"):
        AwsCredentialSource({"AWS_ACCESS_KEY_ID": "AKIA", **NO_IMDS}).get()


def test_web_identity_is_sts_assume_role_with_the_token_files_contents(home, tmp_path):
    with FakeEndpoints({("GET", "/"): (200, {"content-type": "text/xml"}, STS_XML)}) as sts:
        found = AwsCredentialSource(web_identity_env(tmp_path, sts)).get()
    (request,) = sts.requests
    assert "Action=AssumeRoleWithWebIdentity" in request["path"]
    query = dict(p.split("=", 1) for p in request["path"].split("?", 1)[1].split("&"))
    assert query["WebIdentityToken"] == "eyJ.web.identity" and query["Version"] == "2011-06-15"
    assert query["RoleSessionName"] == "triage-test" and "authorization" not in request["headers"]
    assert (found.access_key, found.secret_key, found.token) == ("ASIASTS", "sts-secret",
                                                                 "sts-token")
    assert found.expiry == EXPIRY_TS and "web identity" in found.source


def test_a_web_identity_sts_refuses_is_an_error_never_the_next_source(home, tmp_path):
    refused = b"<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>"
    with FakeEndpoints({("GET", "/"): (403, {}, refused)}) as sts, \
            FakeEndpoints({("GET", "/creds"): (200, {}, creds("ASIANODE", "n"))}) as box:
        env = dict(web_identity_env(tmp_path, sts),
                   AWS_CONTAINER_CREDENTIALS_FULL_URI=box.url + "/creds")
        with pytest.raises(CredentialsError, match="HTTP 403.*AccessDenied"):
            AwsCredentialSource(env).get()
    assert box.requests == []   # a broken IRSA setup is not silently the node's role


def test_shared_files_follow_aws_profile_and_beat_the_container(home, tmp_path):
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = AKIADEF\naws_secret_access_key = def\n"
        "[oncall]\naws_access_key_id = AKIAONCALL\naws_secret_access_key = oncall\n")
    with FakeEndpoints({("GET", "/creds"): (200, {}, creds("ASIACONT", "c"))}) as box:
        env = {"AWS_CONTAINER_CREDENTIALS_FULL_URI": box.url + "/creds", **NO_IMDS}
        assert AwsCredentialSource(env).get().access_key == "AKIADEF"
        found = AwsCredentialSource(dict(env, AWS_PROFILE="oncall")).get()
        assert found.access_key == "AKIAONCALL" and "[oncall]" in found.source
    assert box.requests == []
    with pytest.raises(CredentialsError, match="AWS_PROFILE=nobody: no such profile"):
        AwsCredentialSource(dict(env, AWS_PROFILE="nobody")).get()


def test_a_profile_with_a_credential_process_runs_it(home, tmp_path):
    script = tmp_path / "creds.py"
    script.write_text("import json; print(json.dumps({'Version': 1, 'AccessKeyId': 'ASIAPROC', "
                      "'SecretAccessKey': 's', 'SessionToken': 't', 'Expiration': "
                      f"'{EXPIRY}'}}))")
    (home / ".aws").mkdir()
    (home / ".aws" / "config").write_text(f"[profile sso]\nregion = eu-west-1\n"
                                          f"credential_process = {sys.executable} {script}\n"
                                          "[profile assumed]\nrole_arn = arn:aws:iam::1:role/x\n")
    found = AwsCredentialSource({"AWS_PROFILE": "sso", **NO_IMDS}).get()
    assert (found.access_key, found.expiry) == ("ASIAPROC", EXPIRY_TS)
    assert chain.read_profile({"AWS_PROFILE": "sso"})["region"] == "eu-west-1"
    with pytest.raises(CredentialsError, match="profile assumed: role_arn needs exactly one of "
                       "source_profile and credential_source"):
        AwsCredentialSource({"AWS_PROFILE": "assumed", **NO_IMDS}).get()


def test_the_container_endpoint_sends_the_token_from_its_file(home, tmp_path):
    (tmp_path / "pod-identity-token").write_text("pod-token\n")
    with FakeEndpoints({("GET", "/v1/credentials"): (200, {}, creds("ASIAPOD", "p"))}) as box:
        found = AwsCredentialSource({
            "AWS_CONTAINER_CREDENTIALS_FULL_URI": box.url + "/v1/credentials",
            "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": str(tmp_path / "pod-identity-token"),
            "AWS_CONTAINER_AUTHORIZATION_TOKEN": "ignored-when-the-file-is-set",
            **NO_IMDS}).get()
        (request,) = box.requests
    assert request["headers"]["authorization"] == "pod-token"
    assert (found.access_key, found.token, found.expiry) == ("ASIAPOD", "p", EXPIRY_TS)


def test_a_container_uri_that_is_neither_https_nor_local_is_refused(home):
    with pytest.raises(CredentialsError, match="must be a loopback address"):
        AwsCredentialSource({"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://198.51.100.7/c",
                             **NO_IMDS}).get()


def imds(answer):
    """IMDSv2: a session token for a PUT with the TTL header; nothing without that token."""
    def token(record):
        ttl = record["headers"].get("x-aws-ec2-metadata-token-ttl-seconds")
        return (200, {}, b"imds-session") if ttl == "21600" else (400, {}, b"")

    def guarded(body):
        def serve(record):
            if record["headers"].get("x-aws-ec2-metadata-token") != "imds-session":
                return 401, {}, b""
            return 200, {}, body
        return serve
    base = "/latest/meta-data/iam/security-credentials/"
    return FakeEndpoints({("PUT", "/latest/api/token"): token,
                          ("GET", base): guarded(b"node-role\n"),
                          ("GET", base + "node-role"): guarded(answer)})


def test_imdsv2_asks_for_a_token_first_then_the_role_and_its_credentials(home):
    with imds(answer=json.dumps(dict(creds("ASIANODE", "n"), Code="Success")).encode()) as box:
        found = AwsCredentialSource({"AWS_EC2_METADATA_SERVICE_ENDPOINT": box.url}).get()
        methods = [(r["method"], r["path"]) for r in box.requests]
    assert methods == [("PUT", "/latest/api/token"),
                       ("GET", "/latest/meta-data/iam/security-credentials/"),
                       ("GET", "/latest/meta-data/iam/security-credentials/node-role")]
    assert found.access_key == "ASIANODE" and "IMDSv2" in found.source


def test_with_no_source_at_all_the_error_lists_what_was_tried(home):
    with pytest.raises(CredentialsError) as failed:
        AwsCredentialSource(dict(NO_IMDS)).get()
    for place in ("environment", "web identity", "shared files", "container endpoint",
                  "instance metadata"):
        assert place in str(failed.value)
    with pytest.raises(CredentialsError):  # IMDS switched off: the same answer, no request
        AwsCredentialSource({"AWS_EC2_METADATA_DISABLED": "true"}).get()


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def test_temporary_credentials_are_refreshed_before_they_expire(home):
    served = iter([creds("ASIAONE", "1"), creds("ASIATWO", "2")])
    broken = {"now": False}

    def answer(record):
        return (500, {}, b"down") if broken["now"] else (200, {}, next(served))
    clock = Clock(EXPIRY_TS - 3600)
    with FakeEndpoints({("GET", "/c"): answer}) as box:
        source = AwsCredentialSource({"AWS_CONTAINER_CREDENTIALS_FULL_URI": box.url + "/c",
                                      **NO_IMDS}, clock=clock)
        assert source.get().access_key == "ASIAONE"
        clock.now = EXPIRY_TS - chain.REFRESH_MARGIN - 1     # not yet due: no request
        assert source.get().access_key == "ASIAONE" and box.count("GET", "/c") == 1
        clock.now = EXPIRY_TS - chain.REFRESH_MARGIN + 1     # due: the same source again
        assert source.get().access_key == "ASIATWO" and source.refreshes == 1
        broken["now"] = True                                  # due, and the source is down:
        clock.now = EXPIRY_TS - 10                            # the old ones still last
        assert source.get().access_key == "ASIATWO"
        clock.now = EXPIRY_TS + 1                             # expired and still down
        with pytest.raises(CredentialsError, match="expired and could not be refreshed"):
            source.get()


def test_a_profile_with_only_a_region_lets_the_chain_go_on(home):
    (home / ".aws").mkdir()
    (home / ".aws" / "config").write_text("[profile pods]\nregion = eu-west-1\n")
    with FakeEndpoints({("GET", "/creds"): (200, {}, creds("ASIACONT", "c"))}) as box:
        found = AwsCredentialSource({"AWS_PROFILE": "pods", **NO_IMDS,
                                     "AWS_CONTAINER_CREDENTIALS_FULL_URI": box.url + "/creds"}
                                    ).get()
    assert found.access_key == "ASIACONT"


# --- profiles with role_arn: STS AssumeRole, signed with the source's credentials ----------------

def write_config(home, text):
    (home / ".aws").mkdir(exist_ok=True)
    (home / ".aws" / "config").write_text(text)


def test_a_role_profile_assumes_its_role_with_its_source_profile_s_keys(home):
    write_config(home, "[profile oncall]\nrole_arn = arn:aws:iam::111:role/triage\nsource_profile = base\n"
                       "role_session_name = sre-bot\nexternal_id = ext-42\nduration_seconds = 1800\n"
                       "region = eu-west-1\n[profile base]\naws_access_key_id = AKIABASE\n"
                       "aws_secret_access_key = base-secret\n")
    with fake_sts({"AKIABASE": ("base-secret", None)},
                  {"arn:aws:iam::111:role/triage": ("ASIAROLE", "role-token")}) as sts:
        clock = Clock(EXPIRY_TS - 3600)
        source = AwsCredentialSource({"AWS_PROFILE": "oncall", "AWS_ENDPOINT_URL_STS": sts.url, **NO_IMDS},
                                     clock=clock)
        found = source.get()
        assert (found.access_key, found.token, found.expiry) == ("ASIAROLE", "role-token", EXPIRY_TS)
        assert "assume role arn:aws:iam::111:role/triage (profile oncall, source_profile base), STS" \
            == found.source
        assert sts.requests[0]["form"] == {"Action": "AssumeRole", "Version": "2011-06-15",
                                           "RoleArn": "arn:aws:iam::111:role/triage", "RoleSessionName": "sre-bot",
                                           "ExternalId": "ext-42", "DurationSeconds": "1800"}
        clock.now = EXPIRY_TS - chain.REFRESH_MARGIN + 1   # due: assumed again
        assert source.get().access_key == "ASIAROLE" and source.refreshes == 1 and len(sts.requests) == 2
    assert "role-token" not in repr(found) and "secret" not in repr(found)


def test_roles_chain_and_a_credential_source_signs_with_its_credentials(home):
    write_config(home, "[profile inner]\nrole_arn = arn:aws:iam::222:role/hop\nsource_profile = keys\n"
                       "[profile outer]\nrole_arn = arn:aws:iam::333:role/triage\nsource_profile = inner\n"
                       "[profile keys]\naws_access_key_id = AKIAKEYS\naws_secret_access_key = k\n"
                       "[profile fromenv]\nrole_arn = arn:aws:iam::444:role/triage\n"
                       "credential_source = Environment\n")
    answers = {"arn:aws:iam::222:role/hop": ("ASIAHOP", "hop-token"),
               "arn:aws:iam::333:role/triage": ("ASIAOUTER", "outer-token"),
               "arn:aws:iam::444:role/triage": ("ASIAENVROLE", "env-role-token")}
    keys = {"AKIAKEYS": ("k", None), "ASIAHOP": ("ASIAHOP-secret", "hop-token"), "AKIAENV": ("env-secret", None)}
    with fake_sts(keys, answers, region="us-east-1") as sts:
        base = {"AWS_ENDPOINT_URL_STS": sts.url, **NO_IMDS}
        assert AwsCredentialSource(dict(base, AWS_PROFILE="outer")).get().access_key == "ASIAOUTER"
        assert [r["form"]["RoleArn"] for r in sts.requests] == ["arn:aws:iam::222:role/hop",
                                                               "arn:aws:iam::333:role/triage"]
        # the environment's keys sign for the role; they are not the credentials used
        with pytest.MonkeyPatch.context() as patch:
            patch.delenv("AWS_REGION", raising=False)
            found = chain.from_shared_files(dict(base, AWS_PROFILE="fromenv", **STATIC))
        assert found.access_key == "ASIAENVROLE" and "credential_source Environment" in found.source


@pytest.mark.parametrize("config, words", [
    ("[profile p]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = p2\n[profile p2]\n"
     "role_arn = arn:aws:iam::1:role/y\nsource_profile = p\n", "source_profile goes round: p -> p2 -> p"),
    ("[profile p]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = gone\n", "source_profile gone: no such profile"),
    ("[profile p]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = empty\n[profile empty]\nregion = us-east-1\n",
     "its source_profile empty has no credentials"),
    ("[profile p]\nrole_arn = arn:aws:iam::1:role/x\ncredential_source = Laptop\n", "credential_source 'Laptop'"),
    ("[profile p]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = k\nmfa_serial = arn:aws:iam::1:mfa/me\n"
     "[profile k]\naws_access_key_id = A\naws_secret_access_key = B\n", "asks for an MFA code"),
])
def test_a_role_profile_that_cannot_work_says_why_and_asks_no_one(home, config, words):
    write_config(home, config)
    with fake_sts({}, {}) as sts:
        with pytest.raises(CredentialsError, match=words.replace("(", r"\(").replace(")", r"\)")):
            AwsCredentialSource({"AWS_PROFILE": "p", "AWS_ENDPOINT_URL_STS": sts.url, **NO_IMDS}).get()
    assert sts.requests == []


def test_sts_refusing_the_role_is_an_error_with_its_answer(home):
    write_config(home, "[profile p]\nrole_arn = arn:aws:iam::1:role/x\nsource_profile = k\n"
                       "[profile k]\naws_access_key_id = AKIAWRONG\naws_secret_access_key = B\n")
    with fake_sts({"AKIAOTHER": ("s", None)}, {}) as sts:
        with pytest.raises(CredentialsError, match="assume role arn:aws:iam::1:role/x .*HTTP 403.*InvalidClientTokenId"):
            AwsCredentialSource({"AWS_PROFILE": "p", "AWS_ENDPOINT_URL_STS": sts.url, **NO_IMDS}).get()
    assert len(sts.requests) == 1


# --- SSO profiles (IAM Identity Center): the login `aws sso login` cached, then the portal -------

def sso_login(home, name, *, expires="2099-01-01T00:00:00Z"):
    import hashlib
    cache = home / ".aws" / "sso" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"{hashlib.sha1(name.encode()).hexdigest()}.json").write_text(json.dumps(
        {"startUrl": "https://acme.awsapps.com/start", "region": "eu-central-1",
         "accessToken": "sso-access-token", "expiresAt": expires}))


def portal(expiration_ms=EXPIRY_TS * 1000):
    def serve(record):
        if record["headers"].get("x-amz-sso_bearer_token") != "sso-access-token":
            return 401, {}, {"message": "Session token not found or invalid"}
        return 200, {}, {"roleCredentials": {"accessKeyId": "ASIASSO", "secretAccessKey": "sso-secret",
                                             "sessionToken": "sso-session", "expiration": expiration_ms}}
    return FakeEndpoints({("GET", "/federation/credentials"): serve})


@pytest.mark.parametrize("config, cache_key", [
    ("[profile dev]\nsso_session = acme\nsso_account_id = 111122223333\nsso_role_name = Triage\n"
     "[sso-session acme]\nsso_start_url = https://acme.awsapps.com/start\nsso_region = eu-central-1\n", "acme"),
    ("[profile dev]\nsso_start_url = https://acme.awsapps.com/start\nsso_region = eu-central-1\n"
     "sso_account_id = 111122223333\nsso_role_name = Triage\n", "https://acme.awsapps.com/start")])
def test_an_sso_profile_gets_its_role_credentials_with_the_cached_login(home, config, cache_key):
    write_config(home, config)
    sso_login(home, cache_key)
    with portal() as box:
        found = AwsCredentialSource({"AWS_PROFILE": "dev", "AWS_ENDPOINT_URL_SSO": box.url, **NO_IMDS}).get()
    assert (found.access_key, found.token, found.expiry) == ("ASIASSO", "sso-session", EXPIRY_TS)
    assert "account 111122223333, role Triage" in found.source and "sso-access-token" not in repr(found)
    (request,) = box.requests
    assert request["path"] == "/federation/credentials?account_id=111122223333&role_name=Triage"


def test_a_role_profile_can_take_an_sso_profile_as_its_source(home):
    write_config(home, "[profile dev]\nsso_session = acme\nsso_account_id = 1\nsso_role_name = Triage\n"
                       "[sso-session acme]\nsso_start_url = https://acme.awsapps.com/start\nsso_region = eu-central-1\n"
                       "[profile bedrock]\nrole_arn = arn:aws:iam::2:role/bedrock\nsource_profile = dev\n")
    sso_login(home, "acme")
    with portal() as box, fake_sts({"ASIASSO": ("sso-secret", "sso-session")},
                                   {"arn:aws:iam::2:role/bedrock": ("ASIABR", "br-token")}, region="us-east-1") as sts:
        found = AwsCredentialSource({"AWS_PROFILE": "bedrock", "AWS_ENDPOINT_URL_SSO": box.url,
                                     "AWS_ENDPOINT_URL_STS": sts.url, **NO_IMDS}).get()
    assert found.access_key == "ASIABR" and len(box.requests) == len(sts.requests) == 1


@pytest.mark.parametrize("login, words", [
    (None, "no cached SSO login"), ("2020-01-01T00:00:00Z", "the SSO login expired"),
    ("2020-01-01T00:00:00UTC", "the SSO login expired")])
def test_without_a_current_sso_login_it_says_to_log_in_and_asks_no_one(home, login, words):
    write_config(home, "[profile dev]\nsso_session = acme\nsso_account_id = 1\nsso_role_name = Triage\n"
                       "[sso-session acme]\nsso_start_url = https://acme.awsapps.com/start\nsso_region = eu-central-1\n")
    if login:
        sso_login(home, "acme", expires=login)
    with portal() as box:
        with pytest.raises(CredentialsError, match=f"{words}.*run aws sso login --sso-session acme"):
            AwsCredentialSource({"AWS_PROFILE": "dev", "AWS_ENDPOINT_URL_SSO": box.url, **NO_IMDS}).get()
    assert box.requests == []


def test_an_sso_profile_missing_its_account_or_role_names_them(home):
    write_config(home, "[profile dev]\nsso_session = acme\n[sso-session acme]\nsso_region = eu-central-1\n")
    with pytest.raises(CredentialsError, match="sso_start_url, sso_account_id, sso_role_name not set"):
        AwsCredentialSource({"AWS_PROFILE": "dev", **NO_IMDS}).get()

