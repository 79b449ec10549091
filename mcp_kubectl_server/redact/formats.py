"""Known token formats: one table row per vendor format, each a shape made of literal text and
placeholders, `{alphabet:length}`. The same shape matches a token here and makes a realistic
fresh one in the tests (tests/server/test_redact_formats.py plants one of each, everywhere).

    {b62:36}    exactly 36 characters of the b62 alphabet (the last placeholder: 36 or more)
    {hex:32-40} 32 to 40 characters        {b64u:20+} 20 or more characters
    {NAME}      one of the literals CHOICES[NAME]; {UUID} a UUID; {JWT} a JWT's last segments

Rows are written from what each vendor publishes about its own tokens (prefix, alphabet and
length); a vendor that lengthens its tokens is still matched, since the last part has no upper
bound. A row whose shape starts with a literal is found through one scan for every prefix at
once (a trie-shaped pattern, fast on text that has none); the few rows whose literal sits inside
the token are searched only when that literal occurs in the text.
"""

import functools
import re
from collections import namedtuple

MASK = "[REDACTED]"
ALPHABETS = {
    "b62": "A-Za-z0-9", "b64u": "A-Za-z0-9_\\-", "b64": "A-Za-z0-9+/", "b64p": "A-Za-z0-9+/=",
    "hex": "0-9a-f", "HEX": "0-9A-F", "Hex": "0-9a-fA-F", "an": "a-z0-9", "AN": "A-Z0-9",
    "alpha": "A-Za-z", "dig": "0-9", "b62u": "A-Za-z0-9_", "tok": "A-Za-z0-9_\\-.",
    "bech32": "02-9AC-HJ-NP-Z", "azure": "A-Za-z0-9_~.\\-", "url": "A-Za-z0-9_\\-/",
    "b62d": "A-Za-z0-9\\-", "mno": "MNO",
}
Format = namedtuple("Format", "vendor what shape")

_ROWS = [
    # cloud providers and their OAuth tokens
    Format("AWS", "access key id", "{AWSID}{AN:16}"),
    Format("Google Cloud", "API key", "AIza{b64u:35}"),
    Format("Google", "OAuth 2.0 access token", "ya29.{tok:40+}"),
    Format("Google", "OAuth 2.0 refresh token", "1//0{b64u:40+}"),
    Format("Google", "OAuth client secret", "GOCSPX-{b64u:28}"),
    Format("Microsoft Entra ID", "client secret", "{azure:3}{dig:1}Q~{azure:31-34}"),
    Format("Alibaba Cloud", "AccessKey id", "LTAI{b62:20}"),
    Format("Tencent Cloud", "SecretId", "AKID{b62:32}"),
    Format("DigitalOcean", "personal, OAuth and refresh tokens", "{DO}_v1_{hex:64}"),
    Format("Heroku", "API key", "HRKU-{b64u:60}"),
    Format("Fly.io", "deploy and org tokens", "{FLY}_{b64p:40+}"),
    Format("HashiCorp Vault", "service, batch and recovery tokens", "{VAULT}.{b64u:24+}"),
    Format("HashiCorp Terraform Cloud", "API token", "{b62:14}.atlasv1.{b64u:60+}"),
    Format("Doppler", "tokens (personal, service, CLI, SCIM, audit)", "dp.{DOPPLER}.{b62:40+}"),
    Format("Pulumi", "access token", "pul-{hex:40}"),
    Format("Tailscale", "auth, API and OAuth client keys", "tskey-{TAILSCALE}-{b62:20+}"),
    Format("1Password", "service account token", "ops_eyJ{b64u:40+}"),
    Format("Supabase", "access token", "sbp_{hex:40}"),
    Format("Supabase", "secret API key", "sb_secret_{b64u:30+}"),
    Format("PlanetScale", "service token, password and OAuth token", "pscale_{PSCALE}_{b64u:43}"),
    Format("Databricks", "personal access token", "dapi{hex:32}"),
    Format("Netlify", "personal access token", "nfp_{b62:36}"),
    Format("Cloudflare", "Origin CA key", "v1.0-{hex:24}-{hex:146}"),
    Format("Dropbox", "short-lived access token", "sl.{b64u:130+}"),
    # code hosting, CI and developer tools
    Format("GitHub", "personal, OAuth, user, server and refresh tokens", "{GITHUB}_{b62:36}"),
    Format("GitHub", "fine-grained personal access token", "github_pat_{b62u:22+}"),
    Format("GitLab", "access, deploy, runner, trigger, job and other tokens",
           "{GITLAB}-{b64u:20+}"),
    Format("GitLab", "runner registration token", "GR1348941{b64u:20+}"),
    Format("Atlassian", "API token", "ATATT3{b64u:180+}"),
    Format("Bitbucket", "app password", "ATBB{b62:32+}"),
    Format("CircleCI", "personal and project API tokens", "CCI{CIRCLE}_{b62u:40+}"),
    Format("Buildkite", "API access token", "bkua_{hex:40}"),
    Format("Sourcegraph", "access token", "sgp_{b62u:40+}"),
    Format("SonarQube", "user, project and global analysis tokens", "{SONAR}_{hex:40}"),
    Format("JFrog", "API key", "AKCp{b62:69}"),
    Format("JFrog", "reference token", "cmVmdGtu{b62:56+}"),
    Format("Docker Hub", "personal and organization access tokens", "dckr_{DOCKER}_{b64u:27+}"),
    Format("Postman", "API key", "PMAK-{hex:24}-{hex:34}"),
    Format("Linear", "API key", "lin_api_{b62:40}"),
    Format("Figma", "personal access token", "figd_{b64u:40+}"),
    Format("Notion", "integration secret", "{NOTION}_{b62:43+}"),
    Format("Airtable", "personal access token", "pat{b62:14}.{hex:64}"),
    Format("Contentful", "personal access token", "CFPAT-{b64u:43}"),
    Format("Octopus Deploy", "API key", "API-{AN:26+}"),
    # package registries
    Format("npm", "access token", "npm_{b62:36}"),
    Format("PyPI", "API token", "pypi-AgE{b64u:60+}"),
    Format("RubyGems", "API key", "rubygems_{hex:48}"),
    Format("NuGet", "API key", "oy2{an:43}"),
    Format("crates.io", "API token", "cio{b62:32}"),
    Format("Clojars", "deploy token", "CLOJARS_{hex:60}"),
    # payment
    Format("Stripe", "secret and restricted keys", "{STRIPE}_{b62:16+}"),
    Format("Stripe / Svix / Standard Webhooks", "webhook signing secret", "whsec_{b64p:32+}"),
    Format("Square", "access token", "EAAA{b64u:60}"),
    Format("Square", "OAuth access token and secret", "sq0{SQUARE}-{b64u:22+}"),
    Format("Braintree", "access token", "access_token${BRAINTREE}${an:16}${hex:32}"),
    Format("Razorpay", "API key id", "rzp_{LIVETEST}_{b62:14}"),
    Format("Flutterwave", "secret key", "FLWSECK{FLW}-{hex:32}-X"),
    Format("Shopify", "access tokens and shared secret", "shp{SHOPIFY}_{Hex:32}"),
    Format("Plaid", "access token", "access-{PLAID}-{UUID}"),
    Format("PayPal", "OAuth access token", "A21AA{b64u:60+}"),
    Format("Shippo", "API token", "shippo_{LIVETEST}_{hex:40}"),
    Format("EasyPost", "API key", "EZ{EASYPOST}K{b62:54}"),
    # messaging
    Format("Slack", "bot, user, app, refresh and config tokens", "{SLACK}-{dig:9-13}-{b62d:10+}"),
    Format("Slack", "incoming webhook URL", "hooks.slack.com/{SLACKHOOK}/{url:20+}"),
    Format("Discord", "webhook URL", "discord{DISCORD}.com/api/webhooks/{dig:17-19}/{b64u:60+}"),
    Format("Discord", "bot token", "{mno:1}{b64u:23-25}.{b64u:6}.{b64u:27+}"),
    Format("Microsoft Teams", "incoming webhook URL", "webhook.office.com/webhookb2/{url:40+}"),
    Format("Telegram", "bot token", "{dig:8-10}:AA{b64u:33}"),
    Format("Twilio", "API key SID", "SK{hex:32}"),
    # e-mail
    Format("SendGrid", "API key", "SG.{b64u:22}.{b64u:43}"),
    Format("Mailgun", "API key", "key-{hex:32}"),
    Format("Mailchimp", "API key", "{hex:32}-us{dig:1-2}"),
    Format("Brevo", "API and SMTP keys", "x{BREVO}sib-{hex:64}-{b62:16}"),
    Format("Resend", "API key", "re_{b62:8}_{b62u:24+}"),
    # observability
    Format("Grafana", "service account token", "glsa_{b62:32}_{hex:8}"),
    Format("Grafana Cloud", "access policy token", "glc_{b64p:32+}"),
    Format("New Relic", "user, insert, admin and browser keys", "NR{NEWRELIC}-{AN:27}"),
    Format("New Relic", "license key", "{hex:36}NRAL"),
    Format("Sentry", "organization auth token", "sntrys_eyJ{b64p:60+}"),
    Format("Sentry", "user auth token", "sntryu_{hex:64}"),
    Format("Dynatrace", "API token", "dt0c01.{AN:24}.{AN:64}"),
    Format("Honeycomb", "ingest and management keys", "hc{HONEYCOMB}_{an:58+}"),
    # model hubs and model APIs
    Format("Hugging Face", "user access token", "hf_{alpha:34}"),
    Format("Hugging Face", "organization API token", "api_org_{alpha:34}"),
    Format("OpenAI / Anthropic / OpenRouter", "API keys (sk-, sk-proj-, sk-ant-...)",
           "sk-{b64u:32+}"),
    Format("Replicate", "API token", "r8_{b62:37}"),
    Format("Groq", "API key", "gsk_{b62:52}"),
    Format("Perplexity", "API key", "pplx-{b62:48}"),
    Format("xAI", "API key", "xai-{b62:80}"),
    Format("LangSmith", "personal and service keys", "lsv2_{LANGSMITH}_{hex:32}_{hex:10}"),
    Format("Pinecone", "API key", "pcsk_{b62u:60+}"),
    # file encryption
    Format("age", "X25519 secret key", "AGE-SECRET-KEY-1{bech32:58}"),
    Format("age", "plugin identity", "AGE-PLUGIN-{AN:3-12}-1{bech32:40+}"),
    # signed tokens
    Format("JSON Web Token", "header.payload.signature (also cut short)", "eyJ{b64u:8+}{JWT}"),
    Format("Adafruit IO", "key", "aio_{b62:28}"),
    Format("Prefect", "API key", "pnu_{b62:36}"),
    Format("ReadMe", "API key", "rdme_{an:70}"),
    Format("Frame.io", "developer token", "fio-u-{b64u:64}"),
]
# Alternatives a shape names in capitals: {NAME} is any one of these literals.
CHOICES = {
    "AWSID": ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "APKA",
              "AROA", "ASCA"),
    "DO": ("dop", "doo", "dor"), "FLY": ("fo1", "fm1r", "fm1a", "fm2"),
    "VAULT": ("hvs", "hvb", "hvr"), "DOPPLER": ("pt", "st", "sa", "ct", "scim", "audit"),
    "TAILSCALE": ("auth", "api", "client", "scim", "webhook"),
    "PSCALE": ("tkn", "pw", "oauth"), "GITHUB": ("ghp", "gho", "ghu", "ghs", "ghr"),
    "GITLAB": ("glpat", "gldt", "glrt", "glrtr", "glptt", "glcbt", "glft", "glimt", "glagent",
               "gloas", "glsoat", "glffct", "glwt", "gltst"),
    "CIRCLE": ("PAT", "PRJ"), "SONAR": ("squ", "sqp", "sqa"), "DOCKER": ("pat", "oat"),
    "NOTION": ("secret", "ntn"), "STRIPE": ("sk_live", "sk_test", "rk_live", "rk_test"),
    "SQUARE": ("atp", "csp"), "BRAINTREE": ("production", "sandbox"),
    "LIVETEST": ("live", "test"), "FLW": ("", "_TEST"),
    "SHOPIFY": ("at", "ca", "pa", "ss"), "PLAID": ("production", "development", "sandbox"),
    "EASYPOST": ("A", "T"), "SLACK": ("xoxb", "xoxp", "xoxa", "xoxr", "xoxs", "xoxe",
                                     "xoxe.xoxp", "xapp"),
    "SLACKHOOK": ("services", "workflows", "triggers"), "DISCORD": ("", "app"),
    "BREVO": ("key", "smtp"),
    "NEWRELIC": ("AK", "II", "AA", "JS"), "HONEYCOMB": ("aik", "xik", "amk", "xmk"),
    "LANGSMITH": ("pt", "sk"),
}
_PLACEHOLDER = re.compile(r"\{([A-Za-z0-9]+)(?::(\d+)(?:(\+)|-(\d+))?)?\}")
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def parts(shape):
    """A shape as ("lit", text) | ("choice", literals) | ("run", alphabet, low, high or None)."""
    out, pos = [], 0
    for match in _PLACEHOLDER.finditer(shape):
        if match.start() > pos:
            out.append(("lit", shape[pos:match.start()]))
        name, low, plus, high = match.groups()
        if name in CHOICES:
            out.append(("choice", CHOICES[name]))
        elif name == "JWT":   # the rest of a JWT: up to two more dot-separated segments
            out.append(("raw", r"(?:\.[A-Za-z0-9_\-]*){0,2}"))
        elif name == "UUID":
            out.append(("uuid",))
        else:
            low = int(low)
            out.append(("run", ALPHABETS[name], low, None if plus else int(high or low)))
        pos = match.end()
    if pos < len(shape):
        out.append(("lit", shape[pos:]))
    return out


def _regex(shape, *, shortest=False):
    """The pattern of a shape; its last run has no upper bound (a longer token still matches).
    `shortest`: every run exactly at its lower bound, a test that reads no further than it must."""
    pieces = parts(shape)
    last = max((i for i, p in enumerate(pieces) if p[0] in ("run", "uuid")), default=-1)
    out = []
    for i, piece in enumerate(pieces):
        if piece[0] == "lit":
            out.append(re.escape(piece[1]))
        elif piece[0] == "choice":
            out.append("(?:" + "|".join(map(re.escape, sorted(piece[1], key=len,
                                                                reverse=True))) + ")")
        elif piece[0] == "uuid":
            out.append(UUID)
        elif piece[0] == "raw":
            out.append(piece[1])
        else:
            _, alphabet, low, high = piece
            bound = f"{low}" if shortest else f"{low}," if i == last or high is None else (
                f"{low}" if high == low else f"{low},{high}")
            out.append(f"[{alphabet}]{{{bound}}}")
    return "".join(out)


def _prefixes(shape):
    """The literal texts a shape can start with, or () when it starts with a run."""
    heads = [""]
    for piece in parts(shape):
        if piece[0] == "lit":
            heads = [h + piece[1] for h in heads]
        elif piece[0] == "choice":
            heads = [h + c for h in heads for c in piece[1]]
        else:
            break
    return tuple(h for h in heads if len(h) >= 2)


def _trie(words):
    """One pattern matching any of `words`, shaped as a trie so each position costs a few steps."""
    root = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node):
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body
    return emit(root)


@functools.cache
def _table():
    """The table compiled on first use (no work at import time): the head trie, and each row's
    pattern source by head, compiled only when its head occurs in some text (_pattern)."""
    by_head, infix = {}, []
    for row in _ROWS:
        source = _regex(row.shape)
        heads = _prefixes(row.shape)
        for head in heads:  # a short plain head (SK, cio, pat) needs letters and digits after it
            weak = len(head) <= 3 and head.isalnum()
            by_head.setdefault(head, []).append((source, weak))
        if not heads:
            infix.append(_infix(row.shape, re.compile(source)))
    # A token starts the text or follows a character that is not a letter or digit: scanning
    # for that character first leaves the trie most positions untried.
    trie = _trie(sorted(by_head, key=len, reverse=True))
    return re.compile(trie), re.compile(r"[^A-Za-z0-9](" + trie + ")"), by_head, infix


_pattern = functools.cache(re.compile)


def _infix(shape, pattern):
    """(rest, pattern, shortest and longest text before the rest) for a shape whose longest
    literal sits inside it; rest is the pattern of the shortest text of the shape from that
    literal on (so that finding it reads no further than that: see _infix_spans)."""
    pieces = parts(shape)
    gate_at = max((i for i, p in enumerate(pieces) if p[0] == "lit"),
                  key=lambda i: len(pieces[i][1]))
    low = sum(p[2] for p in pieces[:gate_at] if p[0] == "run")
    high = sum(p[3] or p[2] for p in pieces[:gate_at] if p[0] == "run") + sum(
        max(map(len, p[1])) for p in pieces[:gate_at] if p[0] == "choice")
    rest = "".join(p[1] if p[0] == "lit" else "{" + _name(p) + "}" for p in pieces[gate_at:])
    return re.compile(_regex(rest, shortest=True)), pattern, low, high


def _name(piece):
    """A parsed piece back in shape syntax (for the rest of a shape after its gate)."""
    if piece[0] == "uuid":
        return "UUID"
    if piece[0] == "choice":
        return next(name for name, choices in CHOICES.items() if choices == piece[1])
    _, alphabet, low, high = piece
    name = next(name for name, chars in ALPHABETS.items() if chars == alphabet)
    return f"{name}:{low}" + ("+" if high is None else f"-{high}" if high != low else "")


_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _token_end(text, start, longest, by_head):
    """Where the known token starting at `start` ends, or None when none starts there;
    `longest` is the longest head the scan found there (shorter heads are tried after it)."""
    for size in range(len(longest), 1, -1):
        head = longest[:size]
        if head in by_head:
            for source, weak in by_head[head]:
                match = _pattern(source).match(text, start)
                if match and not (weak and _plain(match.group(0)[len(head):])):
                    return match.end()
    return None


def _plain(body):
    """True when a token body lacks a digit or a letter: a word or a number, not a token."""
    return body.isdigit() or not any(c.isdigit() for c in body)


def redact_formats(text):
    """Every token of a known vendor format becomes [REDACTED]."""
    at_start, scan, by_head, infix = _table()
    spans = []
    first = at_start.match(text)
    hits = [(0, first.group(0))] if first else []
    for start, head in hits + [(hit.start(1), hit.group(1)) for hit in scan.finditer(text)]:
        if spans and start < spans[-1][1]:
            continue
        end = _token_end(text, start, head, by_head)
        if end:
            spans.append((start, end))
    for rest, pattern, low, high in infix:
        spans += _infix_spans(text, rest, pattern, low, high)
    return _masked(text, spans)


def _infix_spans(text, rest, pattern, low, high):
    """Tokens whose shape's longest literal is inside: found by the rest of the shape from that
    literal on (a pattern that starts with a literal scans fast), then matched from before it.
    Gates may overlap: a token whose head holds the literal too (`Q~4` + `1Q~...`) has its
    real gate inside the first one, so the search goes on one character on, not past the gate.
    Each step reads a bounded stretch (the gate is the shape's shortest rest, a start is tested
    for its boundary before the pattern runs), so text made of gates stays linear."""
    spans = []
    gate = rest.search(text)
    while gate:
        at, end = gate.start(), None
        for start in range(max(0, at - high), at - low + 1):
            if start and text[start - 1] in _ALNUM:
                continue
            match = pattern.match(text, start)
            if match:
                spans.append(match.span())
                end = match.end()
                break
        gate = rest.search(text, end or at + 1)
    return spans


def _masked(text, spans):
    out, pos = [], 0
    for start, end in sorted(spans):
        if start >= pos:
            out += [text[pos:start], MASK]
            pos = end
    return "".join(out) + text[pos:] if out else text


def rows():
    """The table, for the tests and the docs: (vendor, what, shape) rows."""
    return list(_ROWS)
