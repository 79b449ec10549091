"""Google service-account keys made by openssl (a real key, as Google's key files carry it:
PKCS #8 PEM), and a fake OAuth token endpoint that checks each JWT bearer assertion's claims and
verifies its RS256 signature with `openssl dgst -verify` against the key's public half."""

import base64
import json
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import parse_qs

from tests.support.fake_endpoints import FakeEndpoints


def make_key(directory, bits=2048, *, traditional=False):
    """(private key PEM, public key path) made by openssl in `directory`."""
    directory = Path(directory)
    private, public = directory / f"key-{bits}.pem", directory / f"key-{bits}.pub.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", f"rsa_keygen_bits:{bits}",
                    "-out", str(private)], check=True, capture_output=True, timeout=60)
    subprocess.run(["openssl", "pkey", "-in", str(private), "-pubout", "-out", str(public)],
                   check=True, capture_output=True, timeout=60)
    if traditional:   # PKCS #1 ("RSA PRIVATE KEY"), as older tools write it
        subprocess.run(["openssl", "rsa", "-in", str(private), "-traditional", "-out", str(private)],
                       check=True, capture_output=True, timeout=60)
    return private.read_text(), public


def service_account_file(path, pem, token_uri, *, project="sre-keys", email="triage@sre-keys.iam.gserviceaccount.com"):
    path.write_text(json.dumps({"type": "service_account", "project_id": project, "private_key_id": "kid-1",
                                "private_key": pem, "client_email": email, "client_id": "1",
                                "token_uri": token_uri}))
    return path


def openssl_verifies(public, message, signature):
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "m").write_bytes(message)
        (Path(tmp) / "s").write_bytes(signature)
        done = subprocess.run(["openssl", "dgst", "-sha256", "-verify", str(public), "-signature",
                               str(Path(tmp) / "s"), str(Path(tmp) / "m")], capture_output=True, timeout=60)
    return done.returncode == 0


def _part(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def token_endpoint(public, *, token="ya29.from-service-account"):
    """FakeEndpoints serving POST /token: a JWT bearer grant whose signature openssl verifies gets
    `token`; each request's decoded header and claims are kept on its record."""
    def serve(record):
        form = {k: v[0] for k, v in parse_qs(record["body"].decode()).items()}
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return 400, {}, {"error": "unsupported_grant_type"}
        head, claims, signature = form["assertion"].split(".")
        record["jwt"] = (json.loads(_part(head)), json.loads(_part(claims)))
        if not openssl_verifies(public, f"{head}.{claims}".encode(), _part(signature)):
            return 400, {}, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}
        return 200, {}, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"}
    return FakeEndpoints({("POST", "/token"): serve})
