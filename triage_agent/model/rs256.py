"""RS256 (RSASSA-PKCS1-v1_5 with SHA-256) signatures with the standard library, for the JWT a
Google service-account key signs to get an access token (gcp_tokens.py).

    private key   PEM "PRIVATE KEY" (PKCS #8, as Google's key files carry it) or "RSA PRIVATE
                  KEY" (PKCS #1): DER read here (a SEQUENCE of INTEGERs: n, e, d, p, q, ...)
    signature     EM = 0x00 0x01 0xFF.. 0x00 DigestInfo(SHA-256, digest)   (RFC 8017, 9.2)
                  s = EM^d mod n, by the Chinese remainder theorem, blinded with a random r
                  (s = (EM r^e)^d r^-1): its time says nothing of d
    JWT           base64url(header) . base64url(claims) . base64url(signature)

Only signing: nothing here verifies a signature (the tests check ours with openssl).
"""

import base64
import hashlib
import json
import re
import secrets

# DigestInfo's DER prefix for SHA-256 (RFC 8017, 9.2, note 1)
SHA256_PREFIX = bytes.fromhex("3031300d060960864801650304020105000420")
RSA_OID = bytes.fromhex("2a864886f70d010101")   # 1.2.840.113549.1.1.1 rsaEncryption
PEM = re.compile(r"-----BEGIN (RSA )?PRIVATE KEY-----(.+?)-----END (?:RSA )?PRIVATE KEY-----", re.S)


class KeyFormatError(ValueError):
    """The private key cannot be read or used."""


def _der(data, at=0):
    """(tag, value bytes, offset after it) of the DER element at `at`."""
    if at + 2 > len(data):
        raise KeyFormatError("the key's DER ends early")
    tag, length, at = data[at], data[at + 1], at + 2
    if length & 0x80:
        count = length & 0x7F
        if not 0 < count <= 4 or at + count > len(data):
            raise KeyFormatError("the key's DER has a bad length")
        length, at = int.from_bytes(data[at:at + count], "big"), at + count
    if at + length > len(data):
        raise KeyFormatError("the key's DER ends early")
    return tag, data[at:at + length], at + length


def _sequence(data):
    """The elements of a DER SEQUENCE's value, as (tag, value)."""
    items, at = [], 0
    while at < len(data):
        tag, value, at = _der(data, at)
        items.append((tag, value))
    return items


def read_private_key(pem):
    """(n, e, d, p, q) of a PEM RSA private key; KeyFormatError when it is not one."""
    found = PEM.search(pem or "")
    if not found:
        raise KeyFormatError("no PEM 'PRIVATE KEY' block")
    try:
        der = base64.b64decode("".join(found.group(2).split()), validate=True)
    except ValueError:
        raise KeyFormatError("the PEM block is not base64") from None
    tag, body, _ = _der(der)
    items = _sequence(body) if tag == 0x30 else []
    if not found.group(1):   # PKCS #8: version, AlgorithmIdentifier, OCTET STRING (the PKCS #1 key)
        if len(items) < 3 or items[1][0] != 0x30 or items[2][0] != 0x04:
            raise KeyFormatError("not a PKCS #8 private key")
        if not _sequence(items[1][1]) or _sequence(items[1][1])[0] != (0x06, RSA_OID):
            raise KeyFormatError("not an RSA key")
        tag, body, _ = _der(items[2][1])
        items = _sequence(body) if tag == 0x30 else []
    numbers = [int.from_bytes(value, "big") for tag, value in items if tag == 0x02]
    if len(numbers) < 6:
        raise KeyFormatError("not an RSA private key (PKCS #1)")
    _, n, e, d, p, q = numbers[:6]
    if p * q != n or n.bit_length() < 2048:
        raise KeyFormatError("the RSA key is inconsistent or shorter than 2048 bits")
    return n, e, d, p, q


def sign(message, key):
    """The RS256 signature of `message` (bytes) with `key` (read_private_key's tuple)."""
    n, e, d, p, q = key
    size = (n.bit_length() + 7) // 8
    digest_info = SHA256_PREFIX + hashlib.sha256(message).digest()
    encoded = b"\x00\x01" + b"\xff" * (size - len(digest_info) - 3) + b"\x00" + digest_info
    m = int.from_bytes(encoded, "big")
    while True:
        r = secrets.randbelow(n - 2) + 2
        try:
            r_inverse = pow(r, -1, n)
            break
        except ValueError:   # r shares a factor with n (as good as impossible): another one
            continue
    blinded = m * pow(r, e, n) % n
    s_p, s_q = pow(blinded, d % (p - 1), p), pow(blinded, d % (q - 1), q)
    s = (s_q + q * ((s_p - s_q) * pow(q, -1, p) % p)) * r_inverse % n
    return s.to_bytes(size, "big")


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwt(claims, key, *, key_id=None):
    """A JWT of `claims` signed RS256 with `key`."""
    header = {"alg": "RS256", "typ": "JWT", **({"kid": key_id} if key_id else {})}
    signing_input = ".".join(_b64url(json.dumps(part, separators=(",", ":")).encode())
                             for part in (header, claims))
    return signing_input + "." + _b64url(sign(signing_input.encode("ascii"), key))
