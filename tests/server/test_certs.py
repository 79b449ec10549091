"""The X.509 reader (digests/certs.py): real certificates from openssl and the fixture builder,
and every malformed input a clear CertificateError rather than a traceback or a guess."""

import base64
import shutil
import subprocess
from datetime import datetime, timezone

import pytest

from fixtures.kube_sim.objects.certs import certificate_der, certificate_pem
from mcp_kubectl_server.digests.certs import (CertificateError, host_covered, read_der_certificate,
                                              read_pem_certificates)

UTC = timezone.utc
FIELDS = dict(subject_cn="shop.example.com", issuer_cn="R11", issuer_o="Let's Encrypt",
              not_before=datetime(2026, 8, 30, tzinfo=UTC), not_after=datetime(2026, 11, 28, tzinfo=UTC),
              dns_names=["shop.example.com", "*.shop.example.com"])


def test_the_fixture_certificate_reads_back_field_by_field():
    cert, = read_pem_certificates(certificate_pem(**FIELDS))
    assert cert.subject == "CN=shop.example.com"
    assert cert.issuer == "CN=R11,O=Let's Encrypt,C=US"
    assert (cert.not_before, cert.not_after) == (FIELDS["not_before"], FIELDS["not_after"])
    assert cert.dns_names == ("shop.example.com", "*.shop.example.com")


@pytest.mark.skipif(not shutil.which("openssl"), reason="openssl is not installed")
def test_a_certificate_made_by_openssl_reads_as_openssl_reads_it(tmp_path):
    key, crt = tmp_path / "k.pem", tmp_path / "c.pem"
    # an RSA key as most Ingress certificates have, of 1,024 bits: the reader skips the key's
    # bits whatever their length, and a 2,048-bit one took openssl ten times the CPU (0.24 s)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:1024", "-nodes", "-keyout", str(key),
                    "-out", str(crt), "-days", "30", "-subj", "/C=DE/O=Shop GmbH/CN=api.example.com",
                    "-addext", "subjectAltName=DNS:api.example.com,DNS:www.example.com"],
                   check=True, capture_output=True, timeout=60)
    dates = subprocess.run(["openssl", "x509", "-in", str(crt), "-noout", "-enddate"], check=True,
                           capture_output=True, text=True, timeout=30).stdout
    # the key first, as a careless bundle would hold it: it is skipped unread
    cert, = read_pem_certificates(key.read_bytes() + crt.read_bytes())
    assert cert.subject == cert.issuer == "CN=api.example.com,O=Shop GmbH,C=DE"
    assert cert.dns_names == ("api.example.com", "www.example.com")
    expected = datetime.strptime(dates.strip().split("=", 1)[1], "%b %d %H:%M:%S %Y GMT").replace(tzinfo=UTC)
    assert cert.not_after == expected and (cert.not_after - cert.not_before).days == 30


@pytest.mark.skipif(not shutil.which("openssl"), reason="openssl is not installed")
def test_openssl_accepts_the_fixture_certificate(tmp_path):
    (tmp_path / "f.pem").write_bytes(certificate_pem(**FIELDS))
    out = subprocess.run(["openssl", "x509", "-in", str(tmp_path / "f.pem"), "-noout", "-enddate",
                          "-ext", "subjectAltName"], check=True, capture_output=True, text=True, timeout=30)
    assert "notAfter=Nov 28 00:00:00 2026 GMT" in out.stdout and "DNS:*.shop.example.com" in out.stdout


def test_a_chain_reads_leaf_first():
    leaf = certificate_pem(**FIELDS)
    ca = certificate_pem(**dict(FIELDS, subject_cn="R11", issuer_cn="ISRG Root X1", dns_names=[]))
    certs = read_pem_certificates(leaf + ca)
    assert [c.subject for c in certs] == ["CN=shop.example.com", "CN=R11"] and certs[1].dns_names == ()


def test_years_after_2049_use_generalized_time_and_read_back():
    late = dict(FIELDS, not_after=datetime(2051, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert read_der_certificate(certificate_der(**late)).not_after == late["not_after"]


@pytest.mark.parametrize("data, words", [
    (b"", "no PEM CERTIFICATE block"),
    (b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "no PEM CERTIFICATE block"),
    (b"-----BEGIN CERTIFICATE-----\n!!!not base64!!!\n-----END CERTIFICATE-----\n", "not base64"),
    (b"-----BEGIN CERTIFICATE-----\n" + base64.b64encode(b"\x30\x82\x05\x00\x30") +
     b"\n-----END CERTIFICATE-----\n", "certificate 1: a DER element runs past the end"),
    (b"-----BEGIN CERTIFICATE-----\n" + base64.b64encode(b"\x02\x01\x05") +
     b"\n-----END CERTIFICATE-----\n", "expected DER tag 0x30"),
    (b"-----BEGIN CERTIFICATE-----\n" + base64.b64encode(certificate_der(**FIELDS)[:300]) +
     b"\n-----END CERTIFICATE-----\n", "certificate 1:"),
])
def test_malformed_input_is_a_certificate_error_that_says_what(data, words):
    with pytest.raises(CertificateError, match=words.replace("(", r"\(")):
        read_pem_certificates(data)


def test_wildcards_cover_one_label_only():
    names = ("shop.example.com", "*.shop.example.com")
    assert host_covered("SHOP.example.com", names) and host_covered("api.shop.example.com", names)
    assert not host_covered("a.b.shop.example.com", names)
    assert not host_covered("example.com", names) and not host_covered("evil-shop.example.com", names)
