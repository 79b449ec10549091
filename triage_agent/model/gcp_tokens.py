"""OAuth access tokens for Vertex AI, from the first source that is configured:

    1 --vertex-token-command   a command printing a token (gcloud auth print-access-token);
                               run again every COMMAND_TOKEN_TTL seconds (it says no expiry)
    2 GOOGLE_APPLICATION_CREDENTIALS, then gcloud's application-default file
      (~/.config/gcloud/application_default_credentials.json, CLOUDSDK_CONFIG moves it):
        authorized_user  POST token_uri (https://oauth2.googleapis.com/token) form
                         grant_type=refresh_token, client_id, client_secret, refresh_token
                         -> {access_token, expires_in}
        service_account  POST token_uri form grant_type=urn:ietf:params:oauth:grant-type:
                         jwt-bearer, assertion=a JWT {iss: client_email, scope: cloud-platform,
                         aud: token_uri, iat, exp: iat + 3600} signed RS256 with private_key
                         (rs256.py) -> {access_token, expires_in}; its project_id is the
                         project when nothing else names one (default_project)
    3 the metadata server (GKE workload identity, GCE, Cloud Run):
        GET http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/
            default/token  with Metadata-Flavor: Google  -> {access_token, expires_in}
When neither --project nor the environment names the project, the credentials may
(`default_project`): a service-account key's project_id, else, where the token comes from the
metadata server, the project it names (GET /computeMetadata/v1/project/project-id).
An authorized_user file's quota_project_id is the project user credentials are billed to:
the transport sends it as x-goog-user-project, as Google's client libraries do.
        (GCE_METADATA_HOST moves it, as google-auth reads it)

`GcpTokenSource.get()` gives a token with at least REFRESH_MARGIN left, asking the same source
again before that. Tokens are never printed; `source` says where they came from.
"""

import json
import os
import shlex
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

from triage_agent.model import rs256

TOKEN_URI = "https://oauth2.googleapis.com/token"
METADATA_HOST = "metadata.google.internal"
METADATA_IP = "169.254.169.254"
TOKEN_PATH = "/computeMetadata/v1/instance/service-accounts/default/token"
PROJECT_PATH = "/computeMetadata/v1/project/project-id"
PROJECT_TIMEOUT = 3.0  # off Google Cloud the metadata host does not answer: say so soon
REFRESH_MARGIN = 300.0
COMMAND_TOKEN_TTL = 300.0
COMMAND_TIMEOUT = 60.0
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
JWT_SECONDS = 3600   # the longest assertion Google accepts


class TokenError(Exception):
    """No usable Google access token: what was tried and what to do."""


def adc_file(environ):
    """gcloud's application-default credentials file (it may not exist)."""
    config = environ.get("CLOUDSDK_CONFIG") or os.path.join(
        environ.get("APPDATA", "") if os.name == "nt" else os.path.expanduser("~/.config"),
        "gcloud")
    return os.path.join(config, "application_default_credentials.json")


def _post_form(url, form, what, timeout):
    data = urllib.parse.urlencode(form).encode()
    request = urllib.request.Request(url, data=data, method="POST", headers={
        "content-type": "application/x-www-form-urlencoded", "accept": "application/json"})
    return _json(request, what, timeout)


def _json(request, what, timeout):
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            data = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode("utf-8", "replace")
        raise TokenError(f"{what}: HTTP {exc.code}: {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise TokenError(f"{what}: cannot reach {request.full_url} "
                         f"({getattr(exc, 'reason', exc)})") from None
    except ValueError:
        raise TokenError(f"{what}: the answer is not JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("access_token"), str):
        raise TokenError(f"{what}: the answer has no access_token")
    return data


def _lifetime(data) -> float:
    """expires_in seconds (an hour when missing or not a number: Google's tokens last that)."""
    try:
        value = float(data.get("expires_in") or 3600)
    except (TypeError, ValueError):
        return 3600.0
    return value if 0 < value < 86400 * 2 else 3600.0


class GcpTokenSource:
    """`get()` -> a current access token; `source` names where it comes from."""

    def __init__(self, *, command=None, environ=None, clock=time.time, timeout=10.0):
        self._environ = dict(os.environ if environ is None else environ)
        self._command, self._clock, self._timeout = command, clock, timeout
        self._fetch, self.source = None, None
        self.quota_project = None  # an authorized_user file's quota_project_id (billing)
        self._token, self._expiry = None, 0.0
        self.refreshes = 0

    def find(self):
        """Settle the source (without fetching a token yet); TokenError when there is none."""
        if self._fetch is not None:
            return self.source
        if self._command:
            try:
                program = shlex.split(self._command)[0]
            except (ValueError, IndexError):
                raise TokenError(f"--vertex-token-command {self._command!r}: not a command "
                                 "(split like a shell would)") from None
            self._fetch, self.source = self._from_command, f"--vertex-token-command ({program})"
            return self.source
        for path, name in ((self._environ.get("GOOGLE_APPLICATION_CREDENTIALS"),
                            "GOOGLE_APPLICATION_CREDENTIALS"),
                           (adc_file(self._environ), "gcloud application-default file")):
            if path and (name.startswith("GOOGLE") or os.path.isfile(path)):
                self._fetch, self.source = self._file_fetcher(path, name)
                return self.source
        self._fetch, self.source = self._from_metadata, "the metadata server " \
            f"({self._environ.get('GCE_METADATA_HOST') or METADATA_HOST})"
        return self.source

    def get(self) -> str:
        self.find()
        now = self._clock()
        if self._token is None or self._expiry - now < REFRESH_MARGIN:
            token, lifetime = self._fetch()
            self.refreshes += self._token is not None
            self._token, self._expiry = token, now + lifetime
        return self._token

    def _from_command(self):
        try:
            done = subprocess.run(shlex.split(self._command), capture_output=True, text=True,
                                  timeout=COMMAND_TIMEOUT, check=False)
        except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
            raise TokenError(f"--vertex-token-command failed: {exc}") from None
        token = done.stdout.strip()
        if done.returncode != 0 or not token or len(token.split()) != 1:
            raise TokenError(f"--vertex-token-command exited {done.returncode} without one "
                             f"token on stdout: {done.stderr.strip()[:300]}")
        return token, COMMAND_TOKEN_TTL + REFRESH_MARGIN

    def _file_fetcher(self, path, name):
        """(fetch, source) for a credentials file: an authorized_user or service_account one."""
        info = _read_json(path, name)
        kind = info.get("type")
        if kind == "service_account":
            return self._service_account_fetcher(info, f"{name} {path}")
        if kind != "authorized_user" or not all(isinstance(info.get(k), str) for k in
                                                ("client_id", "client_secret", "refresh_token")):
            raise TokenError(f"{name} {path}: type {kind!r} is not read by this client (only "
                             "authorized_user and service_account); use --vertex-token-command instead")
        form = {"grant_type": "refresh_token", "client_id": info["client_id"],
                "client_secret": info["client_secret"], "refresh_token": info["refresh_token"]}
        url = info.get("token_uri") or TOKEN_URI
        if isinstance(info.get("quota_project_id"), str) and info["quota_project_id"]:
            self.quota_project = info["quota_project_id"]

        def fetch():
            data = _post_form(url, form, f"refresh-token exchange at {url}", self._timeout)
            return data["access_token"], _lifetime(data)
        return fetch, f"authorized_user refresh token ({name} {path})"

    def _service_account_fetcher(self, info, where):
        email = info.get("client_email")
        if not isinstance(email, str) or not email:
            raise TokenError(f"{where}: a service-account key without client_email")
        try:
            key = rs256.read_private_key(info.get("private_key"))
        except rs256.KeyFormatError as exc:
            raise TokenError(f"{where}: its private_key cannot be used: {exc}") from None
        url = info.get("token_uri") or TOKEN_URI

        def fetch():
            now = int(self._clock())
            assertion = rs256.jwt({"iss": email, "scope": SCOPE, "aud": url, "iat": now,
                                   "exp": now + JWT_SECONDS}, key, key_id=info.get("private_key_id"))
            data = _post_form(url, {"grant_type": JWT_BEARER, "assertion": assertion},
                              f"service-account token exchange at {url}", self._timeout)
            return data["access_token"], _lifetime(data)
        return fetch, f"service account {email} ({where})"

    def _from_metadata(self):
        host = self._environ.get("GCE_METADATA_HOST") or METADATA_HOST
        request = urllib.request.Request(f"http://{host}{TOKEN_PATH}",
                                         headers={"Metadata-Flavor": "Google"})
        try:
            data = _json(request, "the metadata server", self._timeout)
        except TokenError as exc:
            raise TokenError(f"no Google credentials: no --vertex-token-command, no "
                             f"GOOGLE_APPLICATION_CREDENTIALS, no gcloud application-default "
                             f"file ({adc_file(self._environ)}), and {exc} (run gcloud auth "
                             "application-default login, or give --vertex-token-command)") \
                from None
        return data["access_token"], _lifetime(data)


def _read_json(path, name):
    try:
        with open(path, encoding="utf-8") as file:
            info = json.load(file)
    except (OSError, ValueError) as exc:
        raise TokenError(f"{name} {path}: cannot read it as JSON ({exc})") from None
    if not isinstance(info, dict):
        raise TokenError(f"{name} {path}: not a JSON object")
    return info


def default_project(environ, *, timeout=PROJECT_TIMEOUT):
    """The project the credentials name when nothing else does: a service-account key's
    project_id, else (no credentials file) the metadata server's (GKE workload identity, GCE,
    Cloud Run); TokenError with what was tried otherwise."""
    path = environ.get("GOOGLE_APPLICATION_CREDENTIALS")
    path = path or (adc_file(environ) if os.path.isfile(adc_file(environ)) else None)
    if path:
        project = _read_json(path, "the credentials file").get("project_id")
        if isinstance(project, str) and project:
            return project
        raise TokenError(f"the credentials file {path} names no project")
    # by its address, as google-auth checks for it: no DNS lookup to wait on off Google Cloud
    host = environ.get("GCE_METADATA_HOST") or environ.get("GCE_METADATA_IP") or METADATA_IP
    request = urllib.request.Request(f"http://{host}{PROJECT_PATH}", headers={"Metadata-Flavor": "Google"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            project = response.read(200).decode("utf-8", "replace").strip()
    except urllib.error.HTTPError as exc:
        raise TokenError(f"the metadata server answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise TokenError(f"the metadata server ({host}) did not answer ({getattr(exc, 'reason', exc)})") from None
    if not project:
        raise TokenError("the metadata server named no project")
    return project
