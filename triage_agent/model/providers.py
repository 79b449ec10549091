"""Which endpoint a live run talks to, settled from the options and the environment, and the
transport that talks to it.

    anthropic   the hosted API, or a gateway / self-hosted server at --base-url
                (ANTHROPIC_BASE_URL); profile: --api-profile, else TRIAGE_API_PROFILE, else
                `anthropic` for a Claude model id (claude-...) whatever the URL, `compatible`
                for any other model
    bedrock     Amazon Bedrock in --region (AWS_REGION, AWS_DEFAULT_REGION, the AWS profile's
                region); --base-url, AWS_ENDPOINT_URL_BEDROCK_RUNTIME or AWS_ENDPOINT_URL move it
    vertex      Vertex AI in --project (ANTHROPIC_VERTEX_PROJECT_ID, GOOGLE_CLOUD_PROJECT) and
                --region (CLOUD_ML_REGION; `global` too); --base-url or ANTHROPIC_VERTEX_BASE_URL

`settle(args, environ)` checks and fills the options (ProviderError for a bad combination);
`build(args, environ)` makes the transport and resolves its credentials before the first model
call, returning the lines that say where the run's model is and where its credentials came from
(never a value).
"""

import os
import re

from triage_agent.model import profiles

# gen_ai.provider.name of the OpenTelemetry GenAI semantic conventions
SEMCONV_NAMES = {"anthropic": "anthropic", "bedrock": "aws.bedrock", "vertex": "gcp.vertex_ai"}
LABELS = {"anthropic": "Anthropic API", "bedrock": "Amazon Bedrock", "vertex": "Google Vertex AI"}
REGION = re.compile(r"[a-z0-9-]{2,40}")
PROJECT = re.compile(r"[a-z0-9][a-z0-9.:-]{1,62}")


class ProviderError(ValueError):
    """Options that do not make a usable endpoint: the message says which and what to give."""


def _first(*values):
    return next((v for v in values if v), None)


def settle(args, environ, *, default_model) -> None:
    """Check the endpoint options and fill args.provider, base_url, api_profile, region,
    project, custom_headers and profile_reason."""
    from triage_agent.model import gateway
    args.provider = args.provider or "anthropic"
    owners = {"--project": ("vertex",), "--vertex-token-command": ("vertex",),
              "--region": ("bedrock", "vertex")}
    for flag, value in (("--project", args.project), ("--region", args.region),
                        ("--vertex-token-command", args.vertex_token_command)):
        if value is not None and args.provider not in owners[flag]:
            raise ProviderError(f"{flag} goes with --provider {' or '.join(owners[flag])}")
    try:
        args.custom_headers = gateway.custom_headers(args.header,
                                                     environ.get("ANTHROPIC_CUSTOM_HEADERS"))
    except gateway.HeaderError as exc:
        raise ProviderError(str(exc)) from None
    model = args.model or default_model
    if args.provider == "anthropic":
        return _settle_anthropic(args, environ, model)
    if args.api_profile == "compatible":
        raise ProviderError(f"--api-profile compatible is for self-hosted servers; "
                            f"{LABELS[args.provider]} takes the whole request")
    args.api_profile, args.no_fallbacks = "anthropic", True  # fallbacks: the hosted API's
    args.profile_reason = f"{LABELS[args.provider]} serves Claude models"
    if args.provider == "bedrock":
        _settle_bedrock(args, environ)
    else:
        _settle_vertex(args, environ)


def _settle_anthropic(args, environ, model):
    args.base_url = args.base_url or environ.get("ANTHROPIC_BASE_URL") \
        or "https://api.anthropic.com"
    if not args.base_url.startswith(("http://", "https://")):
        raise ProviderError(f"--base-url {args.base_url!r}: give an http:// or https:// URL")
    from_env = environ.get("TRIAGE_API_PROFILE")
    if from_env and from_env not in profiles.PROFILES:
        raise ProviderError(f"TRIAGE_API_PROFILE={from_env!r}: give anthropic or compatible")
    if args.api_profile:
        args.profile_reason = "--api-profile"
    elif from_env:
        args.api_profile, args.profile_reason = from_env, "TRIAGE_API_PROFILE"
    else:
        args.api_profile = profiles.default_profile(model)
        args.profile_reason = (f"{model} is a Claude model id" if args.api_profile ==
                               "anthropic" else f"{model} is not a Claude model id")
    hosted = profiles.is_hosted(args.base_url)
    if not args.replay and hosted and not (environ.get("ANTHROPIC_API_KEY")
                                           or environ.get("ANTHROPIC_AUTH_TOKEN")):
        raise ProviderError("ANTHROPIC_API_KEY is not set (it is needed unless --replay FILE, "
                            "ANTHROPIC_AUTH_TOKEN, or a --base-url of a self-hosted server)")


def _settle_bedrock(args, environ):
    from triage_agent.model import aws_credentials, bedrock
    if not args.model and not args.replay:
        raise ProviderError("--provider bedrock needs --model: a Bedrock model id or inference "
                            "profile (anthropic.claude-..., us.anthropic.claude-...) or its ARN")
    region = _first(args.region, environ.get("AWS_REGION"), environ.get("AWS_DEFAULT_REGION"))
    if not region:
        try:
            region = aws_credentials.read_profile(environ).get("region")
        except aws_credentials.CredentialsError as exc:
            raise ProviderError(str(exc)) from None
    if not region or not REGION.fullmatch(region):
        raise ProviderError(f"--provider bedrock: {'region ' + repr(region) if region else 'no region'}"
                            "; give --region (or AWS_REGION / AWS_DEFAULT_REGION), e.g. us-east-1")
    args.region = region
    args.base_url = args.base_url or bedrock.endpoint(region, environ)
    _check_url(args.base_url)


def _settle_vertex(args, environ):
    from triage_agent.model import vertex
    project = _first(args.project, environ.get("ANTHROPIC_VERTEX_PROJECT_ID"),
                     environ.get("GOOGLE_CLOUD_PROJECT"))
    region = _first(args.region, environ.get("CLOUD_ML_REGION"))
    unnamed = ""
    if not project and not args.vertex_token_command:   # the token's source may name it
        from triage_agent.model import gcp_tokens
        try:
            project = gcp_tokens.default_project(environ)
        except gcp_tokens.TokenError as exc:
            unnamed = f"; {exc}"
    if not project or not PROJECT.fullmatch(project):
        raise ProviderError("--provider vertex: give --project (or ANTHROPIC_VERTEX_PROJECT_ID"
                            f" / GOOGLE_CLOUD_PROJECT), the Google Cloud project id{unnamed}")
    if not region or not REGION.fullmatch(region):
        raise ProviderError("--provider vertex: give --region (or CLOUD_ML_REGION), e.g. "
                            "us-east5, europe-west1 or global")
    args.project, args.region = project, region
    args.base_url = args.base_url or environ.get("ANTHROPIC_VERTEX_BASE_URL") \
        or vertex.default_base_url(region)
    _check_url(args.base_url)


def _check_url(url):
    if not url.startswith(("http://", "https://")):
        raise ProviderError(f"--base-url {url!r}: give an http:// or https:// URL")


def build(args, environ=None):
    """(transport, lines for the operator); ProviderError when no credentials are found."""
    environ = dict(os.environ if environ is None else environ)
    if args.provider == "bedrock":
        return _bedrock(args, environ)
    if args.provider == "vertex":
        return _vertex(args, environ)
    from triage_agent.model import gateway
    transport = gateway.HttpTransport(
        api_key=environ.get("ANTHROPIC_API_KEY") or None, base_url=args.base_url,
        profile=args.api_profile, auth_token=environ.get("ANTHROPIC_AUTH_TOKEN") or None,
        fallbacks=not args.no_fallbacks, headers=args.custom_headers)
    lines = []
    if not profiles.is_hosted(args.base_url):
        lines.append(f"model endpoint {args.base_url} (not the hosted API): profile "
                     f"{args.api_profile} ({args.profile_reason})")
    auth = " and ".join(name for name, present in (
        ("ANTHROPIC_API_KEY", environ.get("ANTHROPIC_API_KEY")),
        ("ANTHROPIC_AUTH_TOKEN (bearer)", environ.get("ANTHROPIC_AUTH_TOKEN"))) if present) \
        or "none"
    args.credentials_source = auth
    named = ", ".join(args.custom_headers)
    lines.append(f"model credentials: {auth}" + (f"; custom headers: {named}" if named else ""))
    return transport, lines


def _bedrock(args, environ):
    from triage_agent.model import aws_credentials, bedrock
    if environ.get("AWS_BEARER_TOKEN_BEDROCK"):   # the official client's order: the key first
        args.credentials_source = "Bedrock API key (AWS_BEARER_TOKEN_BEDROCK)"
        transport = bedrock.BedrockTransport(region=args.region, base_url=args.base_url,
                                             bearer=environ["AWS_BEARER_TOKEN_BEDROCK"],
                                             headers=args.custom_headers)
        return transport, [f"model endpoint: Amazon Bedrock, region {args.region} "
                           f"({args.base_url})",
                           f"model credentials: AWS, {args.credentials_source}"]
    source = aws_credentials.AwsCredentialSource(environ)
    try:
        found = source.get()
    except aws_credentials.CredentialsError as exc:
        raise ProviderError(f"--provider bedrock: {exc}") from None
    transport = bedrock.BedrockTransport(region=args.region, credentials=source,
                                         base_url=args.base_url, headers=args.custom_headers)
    args.credentials_source = found.source
    expiry = " (temporary: refreshed before they expire)" if found.expiry else ""
    return transport, [f"model endpoint: Amazon Bedrock, region {args.region} ({args.base_url})",
                       f"model credentials: AWS, from {found.source}{expiry}"]


def _vertex(args, environ):
    from triage_agent.model import gcp_tokens, vertex
    tokens = gcp_tokens.GcpTokenSource(command=args.vertex_token_command, environ=environ)
    try:
        tokens.get()
    except gcp_tokens.TokenError as exc:
        raise ProviderError(f"--provider vertex: {exc}") from None
    args.credentials_source = tokens.source
    transport = vertex.VertexTransport(project=args.project, region=args.region,
                                       tokens=tokens, base_url=args.base_url,
                                       headers=args.custom_headers)
    return transport, [f"model endpoint: Google Vertex AI, project {args.project}, region "
                       f"{args.region} ({args.base_url})",
                       f"model credentials: Google access token from {tokens.source}"]
