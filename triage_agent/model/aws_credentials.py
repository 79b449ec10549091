"""AWS credentials from the standard chain, in its order, refreshed before they expire.

    1 environment      AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN)
    2 web identity     AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN -> STS AssumeRoleWithWebIdentity
                       (EKS IRSA; aws_remote.py)
    3 shared files     ~/.aws/credentials then ~/.aws/config (AWS_SHARED_CREDENTIALS_FILE,
                       AWS_CONFIG_FILE), the profile AWS_PROFILE names or `default`: static keys,
                       a credential_process command, an SSO profile (its sso-session's or its own
                       start URL and region, through the login `aws sso login` cached), or
                       role_arn: STS AssumeRole signed with the
                       credentials of its source_profile (which may assume a role too) or its
                       credential_source (Environment, Ec2InstanceMetadata, EcsContainer), with
                       its role_session_name, external_id and duration_seconds (aws_remote.py)
    4 container        AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI with
                       AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE] (EKS Pod Identity, ECS; aws_remote.py)
    5 instance         IMDSv2: a session token first, then the role's credentials (aws_remote.py)

The first source that is configured answers; a configured source that fails is an error, not a
reason to try the next one (as botocore does), so a broken web identity is never silently
replaced by the node's role. `AwsCredentialSource` keeps the source that answered and asks it
again once its credentials have less than REFRESH_MARGIN left. Values are never logged: only
`Credentials.source` (where they came from) is printed.
"""

import configparser
import json
import os
import subprocess
import time
from dataclasses import dataclass

from triage_agent.model import aws_remote

REFRESH_MARGIN = 600.0   # seconds before expiry a refresh is due (botocore: 10 min mandatory)
PROCESS_TIMEOUT = 60.0


class CredentialsError(Exception):
    """No usable AWS credentials: what was tried, what failed, what to do."""


@dataclass(frozen=True)
class Credentials:
    """One set of AWS credentials; `expiry` in Unix seconds (None: they do not expire)."""
    access_key: str
    secret_key: str
    token: "str | None" = None
    expiry: "float | None" = None
    source: str = ""

    def __repr__(self):   # never the secret, even in a traceback
        return f"Credentials(source={self.source!r}, expiry={self.expiry!r})"


def from_environment(environ, **_):
    key, secret = environ.get("AWS_ACCESS_KEY_ID"), environ.get("AWS_SECRET_ACCESS_KEY")
    if not key and not secret:
        return None
    if not (key and secret):
        raise CredentialsError("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set")
    return Credentials(key, secret, environ.get("AWS_SESSION_TOKEN") or None,
                       source="environment (AWS_ACCESS_KEY_ID)")


def from_web_identity(environ, *, clock=time.time, timeout=5.0):
    token_file, role = environ.get("AWS_WEB_IDENTITY_TOKEN_FILE"), environ.get("AWS_ROLE_ARN")
    if not (token_file and role):
        return None
    return aws_remote.assume_role_with_web_identity(environ, token_file, role, clock=clock,
                                                    timeout=timeout)


def profile_name(environ) -> str:
    return environ.get("AWS_PROFILE") or environ.get("AWS_DEFAULT_PROFILE") or "default"


def read_profile(environ, name=None, *, section=None) -> dict:
    """The profile's settings (AWS_PROFILE's, or `name`'s) from the config file, then the
    credentials file over them; or another `section` of the config file (sso-session NAME)."""
    name, home = name or profile_name(environ), os.path.expanduser("~")
    config = environ.get("AWS_CONFIG_FILE") or os.path.join(home, ".aws", "config")
    shared = environ.get("AWS_SHARED_CREDENTIALS_FILE") or \
        os.path.join(home, ".aws", "credentials")
    settings = {}
    places = ((config, section),) if section else \
        ((config, name if name == "default" else f"profile {name}"), (shared, name))
    for path, section in places:
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as exc:
            raise CredentialsError(f"cannot read {path}: {exc}") from None
        if parser.has_section(section):
            settings.update({k: v for k, v in parser.items(section)}, _file=path)
    return settings


def from_shared_files(environ, *, clock=time.time, **_):
    settings = read_profile(environ)
    where = f"{settings.get('_file')} [{profile_name(environ)}]"
    if settings.get("role_arn"):
        return _assumed(environ, profile_name(environ), settings, clock=clock, chain=())
    found = _profile_keys(settings, where)
    if found is not None:
        return found
    if settings.get("sso_session") or settings.get("sso_start_url"):
        return _sso(environ, profile_name(environ), settings, clock=clock)
    if environ.get("AWS_PROFILE") and not settings:   # botocore: ProfileNotFound
        raise CredentialsError(f"AWS_PROFILE={environ['AWS_PROFILE']}: no such profile in the "
                               "shared config or credentials file")
    return None   # a profile with only settings (a region): the chain goes on


def _sso(environ, name, settings, *, clock):
    """An SSO profile (IAM Identity Center): its sso-session's (or its own) start URL and region,
    its account and role, through the login `aws sso login` cached."""
    session = settings.get("sso_session")
    sso = read_profile(environ, section=f"sso-session {session}") if session else settings
    wanted = {"start_url": sso.get("sso_start_url"), "region": sso.get("sso_region"),
              "account_id": settings.get("sso_account_id"), "role_name": settings.get("sso_role_name")}
    missing = [f"sso_{k}" for k, v in wanted.items() if not v]
    if missing:
        raise CredentialsError(f"SSO profile {name}: {', '.join(missing)} not set"
                               + (f" (in [sso-session {session}] or the profile)" if session else ""))
    try:
        return aws_remote.sso_credentials(environ, dict(wanted, session=session), clock=clock,
                                          timeout=5.0, where=name)
    except aws_remote.RemoteError as exc:
        raise CredentialsError(str(exc)) from None


def _profile_keys(settings, where):
    """A profile's own credentials: static keys or its credential_process; None without."""
    if settings.get("aws_access_key_id") and settings.get("aws_secret_access_key"):
        return Credentials(settings["aws_access_key_id"], settings["aws_secret_access_key"],
                           settings.get("aws_session_token") or None,
                           source=f"shared file {where}")
    if settings.get("credential_process"):
        return run_credential_process(settings["credential_process"], where)
    return None


ROLE_SOURCES = ("Environment", "Ec2InstanceMetadata", "EcsContainer")   # a credential_source


def _assumed(environ, name, settings, *, clock, chain):
    """The credentials of a profile with role_arn: its source's, then STS AssumeRole."""
    where = f"profile {name}"
    if name in chain:
        raise CredentialsError(f"{where}: source_profile goes round: {' -> '.join(chain + (name,))}")
    if settings.get("mfa_serial"):
        raise CredentialsError(f"{where} asks for an MFA code (mfa_serial), which this client does "
                               "not prompt for: export its credentials first: eval \"$(aws configure "
                               f"export-credentials --profile {name} --format env)\"")
    source_name, kind = settings.get("source_profile"), settings.get("credential_source")
    if bool(source_name) == bool(kind):
        raise CredentialsError(f"{where}: role_arn needs exactly one of source_profile and "
                               "credential_source")
    if kind:
        if kind not in ROLE_SOURCES:
            raise CredentialsError(f"{where}: credential_source {kind!r}: give one of "
                                   f"{', '.join(ROLE_SOURCES)}")
        read = {"Environment": from_environment, "Ec2InstanceMetadata": from_instance,
                "EcsContainer": from_container}[kind]
        source = read(environ, clock=clock)
        said = f"credential_source {kind}"
    else:
        found = read_profile(environ, source_name)
        if not found:
            raise CredentialsError(f"{where}: source_profile {source_name}: no such profile")
        if found.get("role_arn") and source_name != name:
            source = _assumed(environ, source_name, found, clock=clock, chain=chain + (name,))
        elif found.get("sso_session") or found.get("sso_start_url"):
            source = _sso(environ, source_name, found, clock=clock)
        else:   # the profile's own keys (a profile may name itself as its source)
            source = _profile_keys(found, f"{found.get('_file')} [{source_name}]")
        said = f"source_profile {source_name}"
    if source is None:
        raise CredentialsError(f"{where}: its {said} has no credentials")
    try:
        return aws_remote.assume_role(
            environ, source, settings["role_arn"], where=f"{where}, {said}",
            session=settings.get("role_session_name") or f"triage-agent-{int(clock())}",
            external_id=settings.get("external_id"), duration=settings.get("duration_seconds"),
            region=settings.get("region"), timeout=5.0)
    except aws_remote.RemoteError as exc:
        raise CredentialsError(str(exc)) from None


def run_credential_process(command, where):
    """A profile's credential_process: its JSON (Version 1) on stdout."""
    import shlex
    try:
        done = subprocess.run(shlex.split(command), capture_output=True, text=True,
                              timeout=PROCESS_TIMEOUT, check=False)
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise CredentialsError(f"credential_process of {where} failed: {exc}") from None
    if done.returncode != 0:
        raise CredentialsError(f"credential_process of {where} exited {done.returncode}: "
                               f"{done.stderr.strip()[:300]}")
    try:
        data = json.loads(done.stdout)
        return Credentials(data["AccessKeyId"], data["SecretAccessKey"],
                           data.get("SessionToken"), aws_remote.parse_time(data.get("Expiration")),
                           source=f"credential_process of {where}")
    except (ValueError, KeyError, TypeError) as exc:
        raise CredentialsError(f"credential_process of {where} printed no credentials "
                               f"({type(exc).__name__}: {exc})") from None


def from_container(environ, *, timeout=2.0, **_):
    if not (environ.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
            or environ.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")):
        return None
    return aws_remote.container_credentials(environ, timeout=timeout)


def from_instance(environ, *, timeout=1.0, **_):
    if environ.get("AWS_EC2_METADATA_DISABLED", "").lower() == "true":
        return None
    return aws_remote.imds_credentials(environ, timeout=timeout)


CHAIN = (from_environment, from_web_identity, from_shared_files, from_container, from_instance)


def resolve(environ, *, clock=time.time):
    """(source function, Credentials) of the first configured source; CredentialsError."""
    for source in CHAIN:
        try:
            found = source(environ, clock=clock)
        except aws_remote.RemoteError as exc:
            raise CredentialsError(str(exc)) from None
        if found is not None:
            return source, found
    raise CredentialsError(
        "no AWS credentials found: looked in the environment (AWS_ACCESS_KEY_ID), web identity "
        "(AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN), the shared files (profile "
        f"{profile_name(environ)!r}), the container endpoint and the instance metadata service")


class AwsCredentialSource:
    """`get()` -> current Credentials: resolved once, refreshed from the same source when they
    expire within REFRESH_MARGIN; a failed refresh keeps the old ones while they still last."""

    def __init__(self, environ=None, *, clock=time.time):
        self._environ = dict(os.environ if environ is None else environ)
        self._clock = clock
        self._source, self._current = None, None
        self.refreshes = 0

    def get(self) -> Credentials:
        if self._current is None:
            self._source, self._current = resolve(self._environ, clock=self._clock)
        elif self._due():
            try:
                fresh = self._source(self._environ, clock=self._clock)
            except (aws_remote.RemoteError, CredentialsError) as exc:
                if self._current.expiry <= self._clock():
                    raise CredentialsError(f"the AWS credentials from {self._current.source} "
                                           f"expired and could not be refreshed: {exc}") from None
                fresh = None
            if fresh is not None:
                self._current, self.refreshes = fresh, self.refreshes + 1
        return self._current

    def _due(self) -> bool:
        expiry = self._current.expiry
        return expiry is not None and expiry - self._clock() < REFRESH_MARGIN
