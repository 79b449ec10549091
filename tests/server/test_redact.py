"""Redaction: every secret shape the server promises to hide becomes [REDACTED]; ordinary text stays."""

import pytest

from mcp_kubectl_server.redact import redact
from mcp_kubectl_server.redact.shapes import looks_random
from tests.support.timing import fastest

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
    # ordinary log text near the newer patterns (space-separated keys, set, -p, XML, base64)
    "2026-11-29T11:58:29Z INFO token bucket refilled: 20 tokens available",
    "INFO set replicas 3 for deployment web",
    "DEBUG PASSWORD_RESET_TTL is 3600 seconds",
    "container checkout env PAYMENT_API_KEY from secret payment-credentials key api-key",
    "the secret to fast builds is caching",
    "mysql connection pool size=10 -P 3306",
    "9f3c2e1a7b4d5e6f8a9b0c1d2e3f4a5b6c7d8e9f",
    "image_id=registry.example.com/shop/cart@sha256:"
    "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945",
    "<title>Checkout</title> rendered in 12ms",
    "cache hit ratio=0.93 keys=1204 evictions=0 user=app host=db.prod sslmode=require",
    "eyes on the prize: eyJ is just three letters",
    "https://payments.internal.example.com/v1/charge?id=42",
])
def test_ordinary_text_is_kept(text):
    assert redact(text) == text


def test_keeps_the_key_so_the_reader_knows_what_was_hidden():
    assert redact("DB_PASSWORD=hunter2-prod user=app") == "DB_PASSWORD=[REDACTED] user=app"
    assert redact('{"token": "abc", "n": 1}') == '{"token": "[REDACTED]", "n": 1}'


@pytest.mark.parametrize("text", [
    "-----BEGIN PRIVATE KEY-----\n" * 1200,
    "-----BEGIN PRIVATE KEY-----" + "\n" * 30000,
    ("MIIEvQIBADANBgkqhkiG9w0B" * 3 + "\n-----END PRIVATE KEY-----\n") * 300,
    "A" * 32000 + ":",
    "<a " * 10000,
    "password: |\n" * 2700,
    "set DB_PASSWORD " * 2000,
    '\\"' * 16000,
    "mysql -p" * 4000,
    "Q~" * 40000,
    "zzzz1Q~" * 20000,
], ids=["begins", "begin-blank", "ends", "base64", "tags", "blocks", "set", "escaped", "mysql",
        "infix-gates", "infix-starts"])
def test_hostile_text_for_the_newer_patterns_stays_linear(text):
    # each took well under 0.1 s when written; a quadratic pattern takes minutes on 32 KB (the
    # infix gates: a gate read greedily or a start tested after its match took 2 to 100 s)
    seconds, _ = fastest(lambda: redact(text), within=1.0)
    assert seconds < 1.0


def test_redaction_is_idempotent():
    once = redact("DB_PASSWORD=hunter2 Authorization: Bearer abcdefgh12345678")
    assert redact(once) == once


# base64 with no digit (or one at its end) that parses as CamelCase, each found leaking beside a
# weak credential word (`signature`) in the planted table's fresh values, and capitals alone
CAMEL_SHAPED = ["QzFsczFpMFdpNmlDQmhYNjBKeUpaZkVZbzRoRlRh", "YkJMOENpMHNsUXlMeHFRWmRiUFBMcFFiSEZTTzZz",
                "MldTUGJSbFNjbnJoTVlneFlxbnZvMWFnWnFvZGY0", "NFNKdkVxUklsTWVFTmlTdHZIRUhLOUwzUzBhNGlE",
                "AKIASIMULATEDKE042",
                # runs of capitals all along: random, though its lowercase runs average 2.5
                "BKxbTEpLokRKwtCWlkfurUMoqkq1", "IbZretuWEAPrjsIdhZphSYokerblBihBmpvRKQZ9",
                # base64 of text, no digit, capitals most of the time (few case changes)
                "ZEVGYVdXSFNEMXRZRDRqVmNXRDVNVHdyMDRVSXlQ", "TFlYUDJVVGNDcmNiSndCRGVVOFZDWDZRSVRsVWlN"]


@pytest.mark.parametrize("secret", CAMEL_SHAPED)
def test_random_mixed_case_is_no_camel_case_word(secret):
    assert redact(f"request signature {secret} accepted") == "request signature [REDACTED] accepted"
    assert redact(f"uploading with token {secret} to the bucket") == \
        "uploading with token [REDACTED] to the bucket"
    assert redact(f"cloning https://{secret}@git.example.com/shop/app.git") == \
        "cloning https://[REDACTED]@git.example.com/shop/app.git"


@pytest.mark.parametrize("word", ["OOMKilled", "NodeHasSufficientPID", "ContainerGCFailed",
                                  "DNSConfigForming", "HorizontalPodAutoscalerList",
                                  "FailedGetResourceMetric", "ExceededGracePeriod"])
def test_camel_case_words_with_an_acronym_beside_a_credential_word_stay(word):
    for text in (f"request signature {word} accepted", f"uploading with token {word} now",
                 f"cloning https://{word}@git.example.com/shop/app.git"):
        assert redact(text) == text


@pytest.mark.parametrize("word", ["FailedCreatePodSandBox", "FailedKillPodSandbox",
                                  "NodeHasNoDiskPressure", "NetworkPluginNotReady",
                                  "PodReadyToStartContainers", "ReplicaSet/FailedCreatePodSandBox"])
def test_camel_case_words_beside_a_credential_word_stay(word):
    """The must-keep side of the same rule: Kubernetes' CamelCase reasons and kinds that look
    random by their case changes alone (the check below) are words."""
    assert looks_random(word, strict=False)
    assert redact(f"request signature {word} accepted") == f"request signature {word} accepted"
