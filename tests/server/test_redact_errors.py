"""Redaction keeps the why of a wrapped error: `oauth token: unexpected status ...: 401 Unauthorized`.

A secret-named key followed by `: ` hides its value, except where the value is the prose of an
error chain (a word that says something went wrong, then two more lowercase words) or an HTTP
status with its reason phrase; real values next to the same words, and passphrases of plain
lowercase words, are still hidden.
"""

import pytest

from mcp_kubectl_server.redact import MASK, redact

KUBELET = ('Failed to pull image "registry.corp.example.com/payments/ledger:v3.2.0": failed to authorize: '
           "failed to fetch oauth token: unexpected status from POST request to "
           "https://registry.corp.example.com/oauth2/token: 401 Unauthorized")


def test_the_kubelet_pull_error_keeps_its_401():
    assert redact(KUBELET) == KUBELET


@pytest.mark.parametrize("text,hidden", [
    ("token: s3cr3t-9f8e7d", "s3cr3t-9f8e7d"),
    ("password: hunter2 was rotated", "hunter2"),
    ("token: abc def", "abc"),
    ("password=unexpected status from", "unexpected"),   # `=` is an assignment, not an error chain
    ("api_token: 401Unauthorized", "401Unauthorized"),
    ("password: correct horse battery staple", "correct"),   # a passphrase is not an error chain
    ("secret: orange lemon tree", "orange"),
])
def test_values_next_to_the_same_words_are_still_hidden(text, hidden):
    out = redact(text)
    assert hidden not in out and MASK in out


@pytest.mark.parametrize("text, expected", [
    ("password: correct horse battery staple", "password: " + MASK),
    ("  db_password: correct horse battery staple  # rotated monthly",
     "  db_password: " + MASK + "  # rotated monthly"),
    ("password: hunter2 user=bob host: db", "password: " + MASK + " user=bob host: db"),
    ("secret: orange lemon tree, region=eu", "secret: " + MASK + ", region=eu"),
    ("DB_PASSWORD=hunter2 connecting", "DB_PASSWORD=" + MASK + " connecting"),  # `=`: one word
])
def test_a_passphrase_after_a_colon_is_hidden_whole(text, expected):
    """A YAML scalar runs to the end of its line: every word of `password: a b c` is the value,
    up to a word that starts another pair, a comment or punctuation."""
    assert redact(text) == expected


@pytest.mark.parametrize("text, hidden", [
    ("request signature aDlMbWFqMWVoMFJINnNNWHMwTlVxYWtvanRDdnZN accepted",
     "aDlMbWFqMWVoMFJINnNNWHMwTlVxYWtvanRDdnZN"),   # base64 that happens to hold no digit
    ("using token QmVhcmVyVG9rZW5XaXRob3V0RGlnaXRz now", "QmVhcmVyVG9rZW5XaXRob3V0RGlnaXRz"),
])
def test_a_random_token_of_letters_alone_beside_a_credential_word_is_hidden(text, hidden):
    assert hidden not in redact(text) and MASK in redact(text)


@pytest.mark.parametrize("text", [
    "token refresh failed: FailedToRetrieveImagePullSecret for ReplicaSetControllerReconcileLoop",
    "the secret XMLHttpRequestEventTargetHandler is not a value",
])
def test_camelcase_words_beside_a_credential_word_stay(text):
    assert redact(text) == text



@pytest.mark.parametrize("text", [
    "token: failed to refresh credentials",
    "oauth token: unexpected status from POST https://id.example.com/token: 403 Forbidden",
    "password: invalid for user admin",
])
def test_an_error_chain_after_a_key_is_kept(text):
    assert redact(text) == text
