"""The one read of a Secret this server can make: the certificate of an Ingress's TLS Secret.

    get_ingresses ── read_tls_secret(reader, "prod", "shop-tls") ──> GET /api/v1/namespaces/prod/
        <── TlsRead(certs=(leaf, ...))  or  TlsRead(problem=...)      secrets/shop-tls

Only when the operator started the server with --read-tls-certificates (`reader.read_tls`):
then, and only then, the proxy accepts GET of one Secret by name in the allowed namespaces (never
a list or a watch), and the reader lets this module, alone, ask for it. The API returns the whole
Secret and has no way to return one key: of its body, `data["tls.crt"]` is decoded and parsed
here, and everything else (`tls.key` above all) is dropped unread, never decoded, logged or
returned; a Secret whose type is not kubernetes.io/tls is not parsed at all. The RBAC for it is
a separate, optional Role with resourceNames (outputs/rbac-tls-certificates.yaml).
"""

import base64
import binascii

from mcp_kubectl_server.digests.certs import CertificateError, TlsRead, read_pem_certificates
from mcp_kubectl_server.read.errors import ReadError
from mcp_kubectl_server.validate import check_label, check_subdomain

TLS_TYPE = "kubernetes.io/tls"
CERT_KEY = "tls.crt"
ROLE_FILE = "outputs/rbac-tls-certificates.yaml"


def secret_path(namespace, name):
    """The path of one Secret; ValueError unless both are plain object names."""
    if check_label("namespace", namespace) or check_subdomain("secretName", name):
        raise ValueError(f"not a Secret name: {namespace!r}/{name!r}")
    return f"/api/v1/namespaces/{namespace}/secrets/{name}"


def certificate_of(secret):
    """TlsRead from a Secret object; reads `data["tls.crt"]` and nothing else of it."""
    kind = secret.get("type") or "Opaque"
    if kind != TLS_TYPE:
        return TlsRead(problem=f"the Secret is of type {kind}, not {TLS_TYPE}: not parsed")
    encoded = (secret.get("data") or {}).get(CERT_KEY)
    if not isinstance(encoded, str) or not encoded:
        return TlsRead(problem=f"the Secret has no {CERT_KEY}: the controller cannot serve it")
    try:
        pem = base64.b64decode(encoded, validate=True)
        return TlsRead(certs=tuple(read_pem_certificates(pem)))
    except (binascii.Error, ValueError) as exc:
        reason = str(exc) if isinstance(exc, CertificateError) else "its data is not base64"
        return TlsRead(problem=f"{CERT_KEY} is not a readable certificate ({reason})")


def read_tls_secret(reader, namespace, name):
    """TlsRead for Secret `name`: its certificate, or why it could not be read."""
    try:
        secret = reader.get_secret(secret_path(namespace, name))
    except ValueError:
        return TlsRead(problem="not a valid Secret name: not read")
    except ReadError as exc:
        if exc.status == 404:
            return TlsRead(missing=True)
        if exc.status == 403:
            return TlsRead(problem=(f"not readable by these credentials (403): the optional Role in "
                                    f"{ROLE_FILE} must name {name} in its resourceNames"))
        return TlsRead(problem=f"not read: {exc}")
    try:
        return certificate_of(secret)
    finally:
        secret.clear()  # the key and every other value go with it
