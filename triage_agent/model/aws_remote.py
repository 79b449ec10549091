"""The AWS credential sources that answer over HTTP (urllib), each one exchange:

    web identity   GET https://sts.REGION.amazonaws.com/?Action=AssumeRoleWithWebIdentity
                   &Version=2011-06-15&RoleArn=..&RoleSessionName=..&WebIdentityToken=..
                   (unsigned; AWS_ENDPOINT_URL_STS / AWS_ENDPOINT_URL override the endpoint)
                   -> XML .../AssumeRoleWithWebIdentityResult/Credentials/{AccessKeyId,
                   SecretAccessKey, SessionToken, Expiration}
    SSO            GET https://portal.sso.SSO_REGION.amazonaws.com/federation/credentials
                   ?account_id=..&role_name=.. with x-amz-sso_bearer_token: the access token
                   `aws sso login` cached in ~/.aws/sso/cache/SHA1(session name or start URL).json
                   (AWS_ENDPOINT_URL_SSO overrides the portal) -> JSON roleCredentials
                   {accessKeyId, secretAccessKey, sessionToken, expiration (ms)}
    assume role    POST the same endpoint, form Action=AssumeRole&Version=2011-06-15&RoleArn=..
                   &RoleSessionName=..[&ExternalId=..][&DurationSeconds=..], SigV4-signed
                   (service sts) with the source credentials (a profile's role_arn)
                   -> XML .../AssumeRoleResult/Credentials/{...}, as above
    container      GET AWS_CONTAINER_CREDENTIALS_FULL_URI (https, or a loopback or the ECS/EKS
                   link-local host) or http://169.254.170.2 + _RELATIVE_URI, with the header
                   Authorization: the token file's or the variable's value
                   -> JSON {AccessKeyId, SecretAccessKey, Token, Expiration}
    IMDSv2         PUT /latest/api/token (X-aws-ec2-metadata-token-ttl-seconds: 21600) -> token;
                   GET /latest/meta-data/iam/security-credentials/ -> the role name;
                   GET .../ROLE -> JSON {Code: Success, AccessKeyId, SecretAccessKey, Token,
                   Expiration}, both with X-aws-ec2-metadata-token (AWS_EC2_METADATA_SERVICE_ENDPOINT)

Failures are RemoteError with where it was and what came back (never a secret).
"""

import datetime
import hashlib
import ipaddress
import os
import json
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree

STS_NS = "{https://sts.amazonaws.com/doc/2011-06-15/}"
CONTAINER_HOST = "http://169.254.170.2"
CONTAINER_HOSTS = ("169.254.170.2", "169.254.170.23", "fd00:ec2::23", "localhost")
IMDS_ENDPOINT = "http://169.254.169.254"
IMDS_TTL = "21600"


class RemoteError(Exception):
    """A credential endpoint that could not be reached or did not answer with credentials."""


class UnreachableError(RemoteError):
    """Nothing answered at all (no such endpoint on this machine)."""


def parse_time(text):
    """An ISO 8601 time (2026-12-07T12:00:00Z) as Unix seconds; None for None."""
    if text is None:
        return None
    value = datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value.timestamp()


def _fetch(request, timeout, what) -> bytes:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode("utf-8", "replace")
        raise RemoteError(f"{what}: HTTP {exc.code} from {request.full_url}: {detail}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise UnreachableError(f"{what}: cannot reach {request.full_url} ({reason})") from None


def _credentials(data, *, token_key, source):
    from triage_agent.model.aws_credentials import Credentials
    try:
        return Credentials(data["AccessKeyId"], data["SecretAccessKey"], data.get(token_key),
                           parse_time(data.get("Expiration")), source=source)
    except (KeyError, TypeError, ValueError) as exc:
        raise RemoteError(f"{source} answered without credentials ({type(exc).__name__}: "
                          f"{exc})") from None


def sts_endpoint(environ, region=None) -> str:
    region = region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
    default = f"https://sts.{region}.amazonaws.com" if region else "https://sts.amazonaws.com"
    return (environ.get("AWS_ENDPOINT_URL_STS") or environ.get("AWS_ENDPOINT_URL")
            or default).rstrip("/")


def assume_role_with_web_identity(environ, token_file, role, *, clock, timeout):
    """STS AssumeRoleWithWebIdentity with the token file's contents (read again each time:
    the kubelet rotates it)."""
    what = f"web identity ({role})"
    try:
        with open(token_file, encoding="utf-8") as file:
            token = file.read().strip()
    except OSError as exc:
        raise RemoteError(f"{what}: cannot read AWS_WEB_IDENTITY_TOKEN_FILE {token_file} "
                          f"({exc.strerror or exc})") from None
    session = environ.get("AWS_ROLE_SESSION_NAME") or f"triage-agent-{int(clock())}"
    query = urllib.parse.urlencode({"Action": "AssumeRoleWithWebIdentity",
                                    "Version": "2011-06-15", "RoleArn": role,
                                    "RoleSessionName": session, "WebIdentityToken": token})
    url = sts_endpoint(environ) + "/?" + query
    body = _fetch(urllib.request.Request(url, headers={"accept": "application/xml"}),
                  timeout, what)
    return _sts_credentials(body, what, source=f"web identity (AWS_ROLE_ARN {role}, STS)")


def assume_role(environ, source, role, *, session, external_id=None, duration=None, region=None,
                timeout, where):
    """STS AssumeRole into `role`, signed with the `source` Credentials (a profile's role_arn:
    `where` names the profile and where its source came from)."""
    from triage_agent.model import sigv4
    what = f"assume role {role} ({where})"
    form = {"Action": "AssumeRole", "Version": "2011-06-15", "RoleArn": role,
            "RoleSessionName": session}
    form.update({k: str(v) for k, v in (("ExternalId", external_id), ("DurationSeconds", duration)) if v})
    body = urllib.parse.urlencode(form).encode()
    url = sts_endpoint(environ, region) + "/"
    signing = region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    headers = sigv4.sign("POST", url, {"content-type": "application/x-www-form-urlencoded; charset=utf-8",
                                       "accept": "application/xml"}, body,
                         credentials=source, region=signing, service="sts")
    answer = _fetch(urllib.request.Request(url, data=body, headers=headers, method="POST"), timeout, what)
    return _sts_credentials(answer, what, source=f"{what}, STS")


def _sts_credentials(body, what, *, source):
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as exc:
        raise RemoteError(f"{what}: STS answered something that is not XML ({exc})") from None
    found = root.find(f".//{STS_NS}Credentials")
    if found is None:
        found = root.find(".//Credentials")
    if found is None:
        raise RemoteError(f"{what}: STS answered without Credentials")
    data = {child.tag.split("}")[-1]: (child.text or "").strip() for child in found}
    return _credentials(data, token_key="SessionToken", source=source)


def _container_url(environ) -> str:
    full = environ.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
    if not full:
        return CONTAINER_HOST + environ["AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"]
    parts = urllib.parse.urlsplit(full)
    host = parts.hostname or ""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if parts.scheme != "https" and not (loopback or host in CONTAINER_HOSTS):
        raise RemoteError(f"AWS_CONTAINER_CREDENTIALS_FULL_URI {full}: an http URL must be a "
                          "loopback address or the ECS/EKS credentials host")
    return full


def _container_token(environ):
    path = environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")
    if path:
        try:
            with open(path, encoding="utf-8") as file:
                return file.read().strip()
        except OSError as exc:
            raise RemoteError(f"cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE {path} "
                              f"({exc.strerror or exc})") from None
    return environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN")


def container_credentials(environ, *, timeout):
    """The container credentials endpoint (EKS Pod Identity, ECS task roles)."""
    url = _container_url(environ)
    headers = {"accept": "application/json"}
    token = _container_token(environ)
    if token:
        headers["authorization"] = token
    what = f"container credentials endpoint {url}"
    body = _fetch(urllib.request.Request(url, headers=headers), timeout, what)
    try:
        data = json.loads(body)
    except ValueError:
        raise RemoteError(f"{what} answered something that is not JSON") from None
    return _credentials(data, token_key="Token", source=what)


def imds_credentials(environ, *, timeout):
    """The instance role's credentials through IMDSv2 (token first)."""
    base = (environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") or IMDS_ENDPOINT).rstrip("/")
    what = f"instance metadata service {base}"
    try:
        token = _fetch(urllib.request.Request(
            base + "/latest/api/token", method="PUT",
            headers={"x-aws-ec2-metadata-token-ttl-seconds": IMDS_TTL}), timeout, what).decode()
    except UnreachableError:
        return None   # not an EC2 instance (or IMDS is off): the chain found nothing
    headers = {"x-aws-ec2-metadata-token": token.strip()}
    path = base + "/latest/meta-data/iam/security-credentials/"
    role = _fetch(urllib.request.Request(path, headers=headers), timeout, what).decode()
    role = role.strip().splitlines()[0] if role.strip() else ""
    if not role:
        raise RemoteError(f"{what}: the instance has no IAM role")
    body = _fetch(urllib.request.Request(path + role, headers=headers), timeout, what)
    try:
        data = json.loads(body)
    except ValueError:
        raise RemoteError(f"{what} answered something that is not JSON") from None
    if isinstance(data, dict) and data.get("Code", "Success") != "Success":
        raise RemoteError(f"{what}: role {role}: {data.get('Code')} {data.get('Message', '')}")
    return _credentials(data, token_key="Token", source=f"{what} (role {role}, IMDSv2)")


def sso_credentials(environ, sso, *, clock, timeout, where):
    """An SSO profile's role credentials (`sso`: start_url, region, session (or None), account_id,
    role_name) with the access token `aws sso login` cached."""
    key = hashlib.sha1((sso["session"] or sso["start_url"]).encode("utf-8")).hexdigest()
    path = os.path.join(os.path.expanduser("~"), ".aws", "sso", "cache", f"{key}.json")
    login = f"aws sso login {'--sso-session ' + sso['session'] if sso['session'] else '--profile ' + where}"
    try:
        with open(path, encoding="utf-8") as file:
            cached = json.load(file)
        token, expires = cached["accessToken"], parse_time(cached["expiresAt"].replace("UTC", "Z"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise RemoteError(f"SSO profile {where}: no cached SSO login ({path}): run {login}") from None
    if expires <= clock():
        raise RemoteError(f"SSO profile {where}: the SSO login expired: run {login}")
    base = (environ.get("AWS_ENDPOINT_URL_SSO")
            or f"https://portal.sso.{sso['region']}.amazonaws.com").rstrip("/")
    query = urllib.parse.urlencode({"account_id": sso["account_id"], "role_name": sso["role_name"]})
    what = f"SSO profile {where} (account {sso['account_id']}, role {sso['role_name']})"
    body = _fetch(urllib.request.Request(f"{base}/federation/credentials?{query}",
                                         headers={"x-amz-sso_bearer_token": token}), timeout, what)
    try:
        found = json.loads(body)["roleCredentials"]
        data = {"AccessKeyId": found["accessKeyId"], "SecretAccessKey": found["secretAccessKey"],
                "SessionToken": found.get("sessionToken"),
                "Expiration": datetime.datetime.fromtimestamp(found["expiration"] / 1000,
                                                              datetime.timezone.utc).isoformat()}
    except (ValueError, KeyError, TypeError) as exc:
        raise RemoteError(f"{what}: the portal answered without credentials ({type(exc).__name__})") from None
    return _credentials(data, token_key="SessionToken", source=f"{what}, IAM Identity Center")

