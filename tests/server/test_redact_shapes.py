"""Issue 46's classes through redact() alone, with values made afresh on every run: each mended
by shape, each tried in several forms the issue did not list; and what is not a secret (Secret
names, prose after a credential word, what follows a bare `password:`) coming through unchanged.
The same classes go through our server and the loop in test_redact_planted.py (planted.py's
pairs, announced and encoded families; secrets.kept())."""

import base64
import json
import random
import urllib.parse

import pytest

from fixtures.kube_sim.scenarios.planted import password, token, word
from mcp_kubectl_server.redact import MASK, redact
from mcp_kubectl_server.redact.formats import announces, prefixes, rows

RNG = random.Random(random.SystemRandom().getrandbits(64))   # fresh values every run
USER = RNG.choice(["admin", "svc_ledger", "ci-bot", "APP"]) + str(RNG.randint(0, 99))
NAME = "ledger-" + word(RNG, 6).lower()


def hidden(text, secret):
    out = redact(text)
    return secret not in out and MASK in out and redact(out) == out, out


PAIRS = [
    "curl -u {u}:{p} https://api.example.com", "curl --user {u}:{p} -X POST https://x.example",
    "curl -u{u}:{p} https://x.example", "curl --proxy-user {u}:{p} -x http://proxy:3128 x",
    "curl -U {u}:{p} https://x.example", "curl --user={u}:{p} https://x.example",
    'curl -u "{u}:{p}" https://x.example', "curl -u '{u}:{p}' https://x.example",
    'command: ["curl", "-u", "{u}:{p}", "https://x.example"]',
    "skopeo copy --dest-creds {u}:{p} docker://a docker://b",
    "http_proxy={u}:{p}@proxy.corp.example:3128",
    "jdbc:oracle:thin:{u}/{p}@//db.prod.svc:1521/ORCL",
    "jdbc:oracle:thin:{u}/{p}@db.prod.svc:1521:ORCL",
    "spring.datasource.url=jdbc:oracle:thin:{u}/{p}@(DESCRIPTION=(ADDRESS=(HOST=db)))",
    "sqlplus -s -L {u}/{p}@//db:1521/ledger @run.sql", "sqlplus {u}/{p}",
    "rman target {u}/{p}@prod", "impdp userid={u}/{p}@ORCL dumpfile=x.dmp",
    "SQL> connect {u}/{p}@ledger",
]


@pytest.mark.parametrize("form", PAIRS)
def test_a_user_password_pair_hides_the_password_and_keeps_the_user(form):
    for secret in (word(RNG, RNG.randint(9, 14)), password(RNG)):
        text = form.format(u=USER, p=secret)
        ok, out = hidden(text, secret)
        assert ok and USER in out, (text, out)
        escaped = json.dumps(text)   # the same inside a JSON or YAML string
        assert secret not in redact(escaped), escaped


@pytest.mark.parametrize("text", [
    "docker run --user 1000:1000 app", "date -u +%H:%M:%S", "sort -u -k1,1 in.txt",
    "curl --user-agent Mozilla/5.0 https://x.example", "image nginx:1.25@sha256:" + "0a" * 32,
    "git@github.com:shop/ledger.git", "mailto:oncall@example.com",
    "failed to connect api/v1 now", "jdbc:oracle:thin:@//db.prod.svc:1521/ORCL",
    "sqlplus / as sysdba", "curl -u admin https://x.example (prompts for the password)"])
def test_what_is_no_pair_stays(text):
    assert redact(text) == text


ANNOUNCING = sorted({head for row in rows() for head in prefixes(row.shape) if announces(head)})


def test_a_head_that_announces_a_credential_hides_whatever_follows():
    slack = [token(RNG, "xapp-1-A{AN:10}-{dig:13}-{hex:64}"),
             token(RNG, "xoxc-{dig:12}-{dig:13}-{dig:13}-{hex:64}"),
             "xoxd-" + urllib.parse.quote(base64.b64encode(RNG.randbytes(90)).decode(), safe=""),
             token(RNG, "xoxe.xoxp-1-{b64u:120}"), token(RNG, "xoxq-{b62:8}-{b62:30}")]
    odd = [head + token(RNG, "{dig:1}-{AN:9}_{b62:16}") for head in RNG.sample(ANNOUNCING, 12)]
    for value in slack + odd:
        for form in ("{}", "token {} ok", "SLACK={}", '{{"t": "{}"}}', "a\n{}\nb"):
            assert value not in redact(form.format(value)), form.format(value)


@pytest.mark.parametrize("text", ["xai-proxy-6d5f8b9c7-x2x9z", "glft-sync-2", "key-rotation-2024",
                                  "API-GATEWAY-01 up", "v1.0-rc1", "npm_config_cache=/tmp/npm"])
def test_an_announcing_head_in_an_object_name_or_a_word_stays(text):
    assert redact(text) == text


def sas_signature():
    raw = base64.b64encode(RNG.randbytes(32)).decode()
    while "+" not in raw and "/" not in raw:
        raw = base64.b64encode(RNG.randbytes(32)).decode()
    return urllib.parse.quote(raw, safe="")


@pytest.mark.parametrize("form", ["upload retried with SAS signature {} after 403",
                                  "sig {} expired", "the signature was {}", "SAS token: {}",
                                  "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig={}",
                                  "GET /c/b?sig={}&se=2026-12-01 403", "cached {} entries"])
def test_a_url_encoded_signature_is_hidden_whole(form):
    for _ in range(5):
        sig = sas_signature()
        out = redact(form.format(sig))
        assert out == form.format(MASK), out   # no `%2B...%` left of it


def test_secret_names_stay_in_every_form():
    forms = [f"volume tls secret_name={NAME}", f"container app envFrom secret {NAME}",
             f"container app env DB_PASSWORD from secret {NAME} key password",
             f"image_pull_secret {NAME} (from the pod)", f"tls shop.example.com -> Secret {NAME}",
             f"    secret:\n      secretName: {NAME}\n      defaultMode: 420",
             f"  imagePullSecrets:\n  - name: {NAME}\n  nodeName: node-a",
             f"    envFrom:\n    - secretRef:\n        name: {NAME}",
             f"      valueFrom:\n        secretKeyRef:\n          key: password\n          name: {NAME}",
             f"  tls:\n  - hosts:\n    - shop.example.com\n    secretName: {NAME}",
             f'{{"secret": {{"secretName": "{NAME}"}}, "imagePullSecrets": [{{"name": "{NAME}"}}]}}',
             f"existingSecret: {NAME}", f"tokenSecretRef: {NAME}",
             f"condition PasswordRotation=False message={NAME}"]
    for text in forms:
        assert redact(text) == text
    assert MASK in redact(f"secret={NAME}") and MASK in redact(f"secretKey: {NAME}")


@pytest.mark.parametrize("text", [
    "password rotation job db-rotate-{n}-29006155 created pod db-rotate-{n}-29006155-x9z2k",
    "login failed; password reset mail relay smtp-{n}.prod:587 unreachable",
    "Warning Failed login ci: password expired for {n}, rotate it",
    "namespace default: password rotation job {n} created",
    "in namespace default password rotation job {n} created",
    "the default password policy for {n} changed"])
def test_prose_after_a_credential_word_stays(text):
    text = text.format(n=NAME)
    assert redact(text) == text


def test_netrc_still_hides_its_password():
    secret = password(RNG)
    for text in (f"machine git.example.com login ci password {secret}",
                 f"machine git.example.com\n  login ci\n  password {secret}",
                 f"default login anonymous password {secret}",
                 json.dumps(f"machine h\n  login ci\n  password {secret}")):
        assert secret not in redact(text), text


def test_a_bare_key_on_the_last_line_leaves_the_line_after_it():
    for frame in ("--- end log lines ---", "=== end ===", "[end of output]", "# 3 lines"):
        for key in ("password:", "  password:", "DB_PASSWORD=", '"token":'):
            text = f"starting\n{key}\n{frame}"
            assert redact(text) == text, text
            escaped = json.dumps(text)
            assert redact(escaped) == escaped
    secret = word(RNG, 12)   # a value below its key, indented deeper, is still the value
    assert secret not in redact(f"config:\n  password:\n    {secret}\nready")
    assert secret not in redact(f"password:\n{secret}\n")   # one bare word: still the value


# A value named by its sibling `name` (Kubernetes env as another MCP server prints it): the key
# holding it is only `value`, so no key/value rule saw it.
NAMED = ["env:\n- name: {k}\n  value: {v}\n- name: LOG_LEVEL\n  value: debug",
         "        - name: {k}\n          value: \"{v}\"\n        - name: PORT\n          value: \"8080\"",
         "name: {k}\nvalue: '{v}'",
         '"env": [{{"name": "{k}", "value": "{v}"}}, {{"name": "LOG_LEVEL", "value": "debug"}}]',
         '{{"spec": "{{\\"name\\": \\"{k}\\", \\"value\\": \\"{v}\\"}}"}}']


@pytest.mark.parametrize("form", NAMED,
                         ids=["yaml-item", "yaml-quoted", "yaml-map", "json", "json-escaped"])
def test_a_value_named_secret_by_its_sibling_name_is_hidden(form):
    key = RNG.choice(["DB_PASSWORD", "API_TOKEN", "STRIPE_SECRET_KEY", "clientSecret",
                      "REDIS_PASS"])
    value = word(RNG, 7).lower()   # a dictionary-like word: no random shape, no digit
    ok, out = hidden(form.format(k=key, v=value), value)
    assert ok, out
    assert key in out and ("debug" in out or "8080" in out or "LOG_LEVEL" not in form)


@pytest.mark.parametrize("text", [
    "env:\n- name: LOG_LEVEL\n  value: debug\n- name: SECRET_NAME\n  value: ledger-tls",
    '[{"name": "REPLICAS", "value": "3"}, {"name": "TOKEN_AUDIENCE_NAME", "value": "ledger"}]',
    "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef: {name: ledger-db, key: password}",
    "- name: DB_PASSWORD\n    value: elsewhere",   # not the item's own value: another indentation
])
def test_values_beside_names_that_are_not_secret_stay(text):
    assert redact(text) == text
