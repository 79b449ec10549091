"""AWS Signature Version 4 for one HTTP request (stdlib hmac/hashlib), as botocore signs it.

    canonical request = METHOD \\n canonical URI \\n canonical query \\n
                        name:value\\n per signed header (lower-case, sorted, spaces squeezed) \\n
                        signed header names joined by ; \\n hex SHA-256 of the body
    string to sign    = AWS4-HMAC-SHA256 \\n 20261207T120000Z \\n DATE/REGION/SERVICE/aws4_request \\n
                        hex SHA-256 of the canonical request
    signing key       = HMAC chain "AWS4"+secret -> DATE -> REGION -> SERVICE -> "aws4_request"
    authorization     = AWS4-HMAC-SHA256 Credential=KEY_ID/SCOPE, SignedHeaders=..., Signature=HEX

Every header the request carries is signed except those a proxy or tracer may change (user-agent,
connection, traceparent, ...: UNSIGNED), plus `host`, `x-amz-date` and, with temporary credentials,
`x-amz-security-token`. The path is encoded once more than it is on the wire (every service but
S3 does that). tests/agent/model/test_sigv4.py compares the result with botocore's signer.
"""

import datetime
import hashlib
import hmac
import urllib.parse

ALGORITHM = "AWS4-HMAC-SHA256"
# headers a proxy or a tracer may change or drop on the way: never signed (botocore's list)
UNSIGNED = ("authorization", "baggage", "connection", "expect", "keep-alive",
            "proxy-authenticate", "proxy-authorization", "te", "traceparent", "tracestate",
            "trailer", "transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id")


def sign(method, url, headers, body, *, credentials, region, service, now=None) -> dict:
    """`headers` plus host, x-amz-date, x-amz-security-token (when the credentials have a
    session token) and authorization, signed for `credentials` (access_key, secret_key, token)."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    parts = urllib.parse.urlsplit(url)
    signed = {k: v for k, v in headers.items() if k.lower() not in ("authorization",
                                                                    "x-amz-date",
                                                                    "x-amz-security-token")}
    signed["host"] = _host(parts)
    signed["x-amz-date"] = stamp
    if credentials.token:
        signed["x-amz-security-token"] = credentials.token
    names, canonical_headers = _canonical_headers(signed)
    canonical = "\n".join([method.upper(), _canonical_uri(parts.path), _canonical_query(parts.query),
                           canonical_headers, names, hashlib.sha256(body or b"").hexdigest()])
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join([ALGORITHM, stamp, scope,
                         hashlib.sha256(canonical.encode("utf-8")).hexdigest()])
    key = _signing_key(credentials.secret_key, stamp[:8], region, service)
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    signed["authorization"] = (f"{ALGORITHM} Credential={credentials.access_key}/{scope}, "
                               f"SignedHeaders={names}, Signature={signature}")
    return signed


def _host(parts) -> str:
    """The host header as signed: the URL's host, its port only when it is not the default."""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    default = {"https": 443, "http": 80}.get(parts.scheme)
    return host if parts.port in (None, default) else f"{host}:{parts.port}"


def _canonical_uri(path) -> str:
    return urllib.parse.quote(path or "/", safe="/~")


def _canonical_query(query) -> str:
    pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
    return "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                    for k, v in sorted(pairs))


def _canonical_headers(headers):
    merged = {}
    for name, value in headers.items():
        name = name.lower().strip()
        if name in UNSIGNED:
            continue
        merged.setdefault(name, []).append(" ".join(str(value).split()))
    names = sorted(merged)
    lines = "".join(f"{n}:{','.join(merged[n])}\n" for n in names)
    return ";".join(names), lines


def _signing_key(secret, date, region, service) -> bytes:
    key = ("AWS4" + secret).encode("utf-8")
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key
