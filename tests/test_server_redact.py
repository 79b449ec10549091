"""Redaction: every secret shape the server promises to hide becomes [REDACTED]; ordinary text stays."""

import pytest

from mcp_kubectl_server.redact import redact

SECRETS = [
    ("DB_PASSWORD=hunter2-prod", "hunter2-prod"),
    ("export db_password='hunter2 prod'", "hunter2 prod"),
    ('config: {"password": "s3cr3t-value", "user": "app"}', "s3cr3t-value"),
    ('{"apiKey":"k-12345678"}', "k-12345678"),
    ("client_secret: abcdef123456", "abcdef123456"),
    ("GITHUB_TOKEN = ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("api-key: sk_live_0123456789", "sk_live_0123456789"),
    ("Authorization: Bearer eyJabc.def.ghi-not-really", "eyJabc.def.ghi-not-really"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNz' https://x", "dXNlcjpwYXNz"),
    ("sending bearer abcdefghijklmnop1234 to upstream", "abcdefghijklmnop1234"),
    ("aws key AKIAIOSFODNN7EXAMPLE in use", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok",
     "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("connecting to postgres://app:pa55word@db.prod:5432/orders", "pa55word"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc\n-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA7"),
    ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B (cut off)", "MIIEvQIBADANBgkqhkiG9w0B"),
    ("slack xoxb-123456789012-abcdefghij", "xoxb-123456789012-abcdefghij"),
    ('password="hunter2-cut-off', "hunter2-cut-off"),
    ("user=app,DB_PASSWORD=hunter2-prod", "hunter2-prod"),
    ('{"password": "a\\"quoted\\"-secret", "n": 1}', "quoted"),
    ("token: Bearer abcdefgh12345678", "abcdefgh12345678"),
    ("args: app --db-password hunter2-prod --port 8080", "hunter2-prod"),
    ("run with --api-key 'k 123456'", "k 123456"),
    ("{'client_secret': 'abc def'}", "abc def"),
]


@pytest.mark.parametrize("text, secret", SECRETS)
def test_secret_is_redacted(text, secret):
    out = redact(text)
    assert secret not in out
    assert "[REDACTED]" in out


@pytest.mark.parametrize("text", [
    "checkout-6f8d9c7b5d-x7k2p phase=Running ready=0/1 restarts=47 node=node-a age=3h",
    "FATAL: required environment variable PAYMENT_API_URL is not set",
    "container checkout env DB_PASSWORD (literal value, not shown)",
    "container checkout env API_TOKEN from secret payments key token",
    "2026-11-03T10:12:00Z Warning BackOff Pod/checkout-x count=3: Back-off restarting failed container",
    "0/3 nodes are available: 3 Insufficient memory.",
    "image=registry.example.com/shop/cart:v2.4.1-rc0",
    "the password expired for user bob",
    "flags --token-file --verbose",
    "command \"app --port 8080 --log-level debug\"",
])
def test_ordinary_text_is_kept(text):
    assert redact(text) == text


def test_keeps_the_key_so_the_reader_knows_what_was_hidden():
    assert redact("DB_PASSWORD=hunter2-prod user=app") == "DB_PASSWORD=[REDACTED] user=app"
    assert redact('{"token": "abc", "n": 1}') == '{"token": "[REDACTED]", "n": 1}'


def test_redaction_is_idempotent():
    once = redact("DB_PASSWORD=hunter2 Authorization: Bearer abcdefgh12345678")
    assert redact(once) == once
