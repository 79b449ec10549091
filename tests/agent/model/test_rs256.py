"""rs256.py against openssl: the same signature byte for byte (PKCS #1 v1.5 is deterministic), for
keys in both PEM forms and sizes; what is not an RSA key of 2048 bits or more is refused."""

import subprocess

import pytest

from tests.support.google_keys import make_key, openssl_verifies
from triage_agent.model import rs256


@pytest.mark.parametrize("bits, traditional", [(2048, False), (3072, True)])
def test_our_signature_is_openssl_s_and_verifies(tmp_path, bits, traditional):
    pem, public = make_key(tmp_path, bits, traditional=traditional)
    key = rs256.read_private_key(pem)
    for message in (b"", b"header.claims", "ünïcode ✓".encode() * 500):
        (tmp_path / "m").write_bytes(message)
        theirs = subprocess.run(["openssl", "dgst", "-sha256", "-sign", str(tmp_path / f"key-{bits}.pem"),
                                 str(tmp_path / "m")], capture_output=True, check=True, timeout=60).stdout
        ours = rs256.sign(message, key)
        assert ours == theirs and openssl_verifies(public, message, ours)


def test_a_jwt_is_three_base64url_parts_whose_signature_openssl_verifies(tmp_path):
    import base64
    import json
    pem, public = make_key(tmp_path)
    token = rs256.jwt({"iss": "a", "iat": 1}, rs256.read_private_key(pem), key_id="k")
    head, claims, signature = token.split(".")
    assert "=" not in token and json.loads(base64.urlsafe_b64decode(head + "==")) == {
        "alg": "RS256", "typ": "JWT", "kid": "k"}
    assert openssl_verifies(public, f"{head}.{claims}".encode(),
                            base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))


def test_what_is_not_a_usable_rsa_key_is_refused(tmp_path):
    short, _ = make_key(tmp_path, 1024)
    with pytest.raises(rs256.KeyFormatError, match="shorter than 2048 bits"):
        rs256.read_private_key(short)
    ec = tmp_path / "ec.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
                    str(ec)], check=True, capture_output=True, timeout=60)
    with pytest.raises(rs256.KeyFormatError, match="not an RSA key"):
        rs256.read_private_key(ec.read_text())
    for junk in ("", "-----BEGIN PRIVATE KEY-----\n!!!\n-----END PRIVATE KEY-----",
                 "-----BEGIN PRIVATE KEY-----\nMAMCAQA=\n-----END PRIVATE KEY-----"):
        with pytest.raises(rs256.KeyFormatError):
            rs256.read_private_key(junk)
