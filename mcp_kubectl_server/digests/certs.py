"""X.509 certificates, read far enough to say who they name and when they expire (stdlib only).

    tls.crt (PEM: one or more CERTIFICATE blocks, the leaf first)
      -> DER  Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signatureValue }
              TBSCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber, signature,
                                            issuer Name, validity, subject Name,
                                            subjectPublicKeyInfo, [1] [2] OPTIONAL,
                                            [3] extensions OPTIONAL }
              Validity ::= SEQUENCE { notBefore Time, notAfter Time }  (UTCTime or GeneralizedTime)
              Name ::= SEQUENCE OF SET OF SEQUENCE { type OID, value string }

`read_pem_certificates(data)` gives one `Certificate` (subject, issuer, not_before, not_after,
dns_names from subjectAltName) per CERTIFICATE block, or raises CertificateError with a reason.
Only what a triage needs is read; signatures are not checked (that is the TLS client's job), and
nothing here ever sees a private key: callers hand over the certificate bytes alone.
"""

import base64
import binascii
import re
from collections import namedtuple
from datetime import datetime, timezone

PEM_BLOCK = re.compile(rb"-----BEGIN CERTIFICATE-----\s*(.*?)\s*-----END CERTIFICATE-----", re.S)
CERTS_MAX = 10
NAME_KEYS = {"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O",
             "2.5.4.11": "OU", "2.5.4.5": "serialNumber", "0.9.2342.19200300.100.1.25": "DC"}
SUBJECT_ALT_NAME = "2.5.29.17"
_STRINGS = {0x0C: "utf-8", 0x13: "ascii", 0x16: "ascii", 0x14: "latin-1", 0x1E: "utf-16-be",
            0x1C: "utf-32-be", 0x12: "ascii", 0x1A: "ascii"}


class CertificateError(ValueError):
    """The bytes are not a certificate this reader understands; str() says what is wrong."""


# subject and issuer: str; not_before and not_after: datetime (UTC); dns_names: tuple of str
Certificate = namedtuple("Certificate", "subject issuer not_before not_after dns_names")

# What the server learnt of one TLS Secret: `certs` (leaf first) or why not (`problem`, with
# `missing` when the Secret does not exist).
TlsRead = namedtuple("TlsRead", "certs problem missing", defaults=((), "", False))


def _tlv(data, pos):
    """(tag, start of value, end of value) of the DER element at `pos`."""
    if pos + 2 > len(data):
        raise CertificateError("the DER data ends inside an element header")
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if tag & 0x1F == 0x1F:
        raise CertificateError("a multi-byte DER tag, which no certificate field uses")
    if length & 0x80:
        count = length & 0x7F
        if not 1 <= count <= 4 or pos + count > len(data):
            raise CertificateError("a DER length this reader does not accept")
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    if pos + length > len(data):
        raise CertificateError("a DER element runs past the end of the data")
    return tag, pos, pos + length


def _children(data, start, end):
    """The (tag, start, end) of each element inside a constructed value."""
    out = []
    while start < end:
        tag, vstart, vend = _tlv(data, start)
        out.append((tag, vstart, vend))
        start = vend
    return out


def _expect(element, tag, what):
    if element[0] != tag:
        raise CertificateError(f"{what}: expected DER tag 0x{tag:02x}, found 0x{element[0]:02x}")
    return element


def _oid(raw):
    if not raw:
        raise CertificateError("an empty object identifier")
    parts, value = [min(raw[0] // 40, 2), raw[0] - 40 * min(raw[0] // 40, 2)], 0
    for byte in raw[1:]:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            parts.append(value)
            value = 0
    return ".".join(map(str, parts))


def _string(tag, raw):
    codec = _STRINGS.get(tag)
    if codec is None:
        return "#" + raw.hex()
    return raw.decode(codec, "replace")


def _name(data, element):
    """An RFC 4514-like string, most specific part first: CN=shop.example.com,O=Shop,C=DE."""
    _expect(element, 0x30, "Name")
    parts = []
    for rdn in _children(data, element[1], element[2]):
        _expect(rdn, 0x31, "RelativeDistinguishedName")
        for atv in _children(data, rdn[1], rdn[2]):
            kids = _children(data, atv[1], atv[2])
            if len(kids) != 2 or kids[0][0] != 0x06:
                raise CertificateError("an attribute of a Name is not (OID, value)")
            oid = _oid(data[kids[0][1]:kids[0][2]])
            value = _string(kids[1][0], data[kids[1][1]:kids[1][2]])
            parts.append(f"{NAME_KEYS.get(oid, oid)}={value}")
    return ",".join(reversed(parts)) or "(empty)"


def _time(data, element):
    tag, raw = element[0], data[element[1]:element[2]].decode("ascii", "replace")
    try:
        if tag == 0x17:  # UTCTime YYMMDDHHMMSSZ; years 50-99 are 19xx (RFC 5280 4.1.2.5.1)
            moment = datetime.strptime(raw, "%y%m%d%H%M%SZ")
            if moment.year >= 2050:
                moment = moment.replace(year=moment.year - 100)
        elif tag == 0x18:
            moment = datetime.strptime(raw, "%Y%m%d%H%M%SZ")
        else:
            raise CertificateError(f"a validity time with DER tag 0x{tag:02x}")
    except ValueError:
        raise CertificateError(f"a validity time that does not parse: {raw[:20]!r}") from None
    return moment.replace(tzinfo=timezone.utc)


def _dns_names(data, extensions):
    """The dNSName entries of the subjectAltName extension ([3] EXPLICIT Extensions)."""
    names = []
    for outer in _children(data, extensions[1], extensions[2]):
        for ext in _children(data, outer[1], outer[2]):
            kids = _children(data, ext[1], ext[2])
            if not kids or kids[0][0] != 0x06 or _oid(data[kids[0][1]:kids[0][2]]) != SUBJECT_ALT_NAME:
                continue
            value = _expect(kids[-1], 0x04, "extnValue")
            general = _expect(_tlv(data, value[1]), 0x30, "GeneralNames")
            names += [data[s:e].decode("ascii", "replace")
                      for tag, s, e in _children(data, general[1], general[2]) if tag == 0x82]
    return tuple(names)


def read_der_certificate(data):
    """A Certificate from one DER-encoded X.509 certificate."""
    cert = _expect(_tlv(data, 0), 0x30, "Certificate")
    tbs = _expect(_children(data, cert[1], cert[2])[0], 0x30, "TBSCertificate")
    fields = _children(data, tbs[1], tbs[2])
    if fields and fields[0][0] == 0xA0:  # [0] EXPLICIT version
        fields = fields[1:]
    if len(fields) < 6:
        raise CertificateError("the TBSCertificate has fewer fields than X.509 requires")
    issuer, validity, subject = fields[2], fields[3], fields[4]
    times = _children(data, *_expect(validity, 0x30, "Validity")[1:])
    if len(times) != 2:
        raise CertificateError("the Validity does not hold two times")
    extensions = next((f for f in fields[6:] if f[0] == 0xA3), None)
    return Certificate(subject=_name(data, subject), issuer=_name(data, issuer),
                       not_before=_time(data, times[0]), not_after=_time(data, times[1]),
                       dns_names=_dns_names(data, extensions) if extensions else ())


def read_pem_certificates(data):
    """Every CERTIFICATE block of PEM `data` (bytes), read; CertificateError when there is none
    or one does not parse. Only CERTIFICATE blocks are looked at: any other block is skipped
    unread, whatever it holds."""
    blocks = PEM_BLOCK.findall(data)
    if not blocks:
        raise CertificateError("no PEM CERTIFICATE block")
    certs = []
    for i, body in enumerate(blocks[:CERTS_MAX]):
        try:
            der = base64.b64decode(b"".join(body.split()), validate=True)
        except (binascii.Error, ValueError):
            raise CertificateError(f"certificate {i + 1}: its PEM body is not base64") from None
        try:
            certs.append(read_der_certificate(der))
        except (IndexError, CertificateError) as exc:
            raise CertificateError(f"certificate {i + 1}: {exc or 'truncated DER'}") from None
    return certs


def host_covered(host, dns_names):
    """Whether a TLS host (maybe *.example.com) is covered by the certificate's DNS names, with
    the one-label wildcard of RFC 6125."""
    host = host.lower().rstrip(".")
    for name in (n.lower().rstrip(".") for n in dns_names):
        if name == host or (name.startswith("*.") and host.partition(".")[2] == name[2:]):
            return True
    return False
