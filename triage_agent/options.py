"""The triage CLI's options: the parser (with --help's defaults, exit codes and environment),
the cross-option checks argparse cannot do, and the MCP server command they add up to.

UsageError is a bad option or configuration: the CLI exits 2 with its message (and with --json
still prints one outcome). serve.py checks its run options with the same parser and checks.
"""

import argparse
import os
import shlex
import sys

from triage_agent.actions import kinds as actions

DEFAULT_MODEL = "claude-opus-5-5"
DEFAULT_IDLE_TIMEOUT = 30.0  # the same as messages.DEFAULT_IDLE_TIMEOUT (not imported: --help)
HOSTED_BASE_URL = "https://api.anthropic.com"  # messages.DEFAULT_BASE_URL
LOCAL_FIRST_BYTE_TIMEOUT = 600.0  # a CPU reads a long prompt for minutes before the first token
EFFORTS = ("low", "medium", "high", "xhigh", "max")  # output_config.effort, ascending
# os.path, not pathlib, here and in report.py: a CLI run imports nothing else of pathlib's (and
# urllib.parse's, which it pulls in), 7 ms of each start's CPU
PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
# Our own server's cluster-scoped read tools: offered without a namespace argument only when the
# CLI started that server itself (no --mcp), because it bounds them; never by a server's say-so.
OWN_SERVER_UNSCOPED = ("get_nodes", "describe_node", "get_priority_classes", "get_api_resources")


class UsageError(Exception):
    """Bad options or configuration: exit 2 with this message."""


def _positive(kind, minimum):
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value < minimum or value != value:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}")
        return value
    return parse


def _seconds(maximum):
    """A number of seconds from 0 to `maximum`."""
    def parse(text):
        value = _positive(float, 0.0)(text)
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:g}")
        return value
    return parse


EPILOG = """\
exit codes:
  0              a report was written
  2              usage or configuration error
  3              the run ended without a report (a budget spent, a refusal, end_turn after
                 the nudge, max_tokens twice, the context window, a replay fixture exhausted)
  4              model API failure (after retries) or MCP server failure
  130, 143, 129  stopped by ^C, SIGTERM or SIGHUP (128 + the signal number)

environment:
  ANTHROPIC_API_KEY       API key for the Messages API (required for the hosted API unless
                          --replay or ANTHROPIC_AUTH_TOKEN; a self-hosted server may need none)
  ANTHROPIC_AUTH_TOKEN    a bearer token (Authorization: Bearer), for servers that take one
  ANTHROPIC_CUSTOM_HEADERS
                          extra headers for a gateway, one 'Name: value' a line (--header wins)
  TRIAGE_API_PROFILE      anthropic or compatible, when --api-profile is not given
  AWS_REGION, AWS_DEFAULT_REGION, AWS_PROFILE, AWS_ACCESS_KEY_ID, AWS_WEB_IDENTITY_TOKEN_FILE,
  AWS_CONTAINER_CREDENTIALS_FULL_URI, AWS_BEARER_TOKEN_BEDROCK, AWS_ENDPOINT_URL_BEDROCK_RUNTIME,
  ...
                          --provider bedrock: region, credentials (the standard chain) and
                          endpoint, as the AWS CLI reads them (docs/enterprise-models.md)
  ANTHROPIC_VERTEX_PROJECT_ID, GOOGLE_CLOUD_PROJECT, CLOUD_ML_REGION,
  GOOGLE_APPLICATION_CREDENTIALS
                          --provider vertex: project, region and credentials
  ANTHROPIC_BASE_URL      Messages API endpoint, when --base-url is not given (default
                          https://api.anthropic.com)
  KUBECONFIG              read by kubectl, for the default server and executed actions,
                          unless --kubeconfig is given
  PROMETHEUS_URL          --prometheus-url when it is not given (the default server only)
  OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
                          send the run's trace over OTLP/HTTP (JSON) when the run ends; the
                          first is a base URL (/v1/traces is appended), the second is used as
                          it is (default: no export)
  OTEL_EXPORTER_OTLP_HEADERS, OTEL_EXPORTER_OTLP_TRACES_HEADERS
                          headers for the export, key=value,... with URL-encoded values
  OTEL_EXPORTER_OTLP_TIMEOUT, OTEL_EXPORTER_OTLP_TRACES_TIMEOUT
                          export timeout in milliseconds, retry included (default 10000)
  OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
                          only http/json is sent; grpc is a warning (default http/json)
  OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
                          the trace's resource (default service.name triage-agent)
  OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none
                          no export (--trace FILE is still written)
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true
                          put prompts, tool arguments and results (redacted) in the spans
                          (default: spans carry no message content)
"""


def build_parser():
    """The argument parser: every option says its default; --help ends with the exit codes and
    the environment variables the CLI reads."""
    p = argparse.ArgumentParser(prog="triage-agent", description="Triage a Kubernetes incident "
                                "with a model and read-only kubectl tools.", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("symptom", nargs="?", help="what the operator sees, in words")
    p.add_argument("--alert", metavar="FILE|-", help="triage an Alertmanager webhook payload or "
                   "one alert (a file, or - for stdin) instead of a symptom (default: none, the "
                   "symptom is given in words)")
    p.add_argument("--namespaces", required=True, metavar="NS[,NS...]",
                   help="namespaces in scope (required, no default: there is no cluster-wide "
                   "scope)")
    p.add_argument("--mcp", metavar="COMMAND", help="MCP server command to spawn, split like a "
                   "shell would (default: this project's server with the same namespaces, "
                   "context and kubeconfig)")
    p.add_argument("--context", help="kube context for the default server and executed actions "
                   "(default: the kubeconfig's current context)")
    p.add_argument("--kubeconfig", help="kubeconfig for the default server and executed actions "
                   "(default: kubectl's own, $KUBECONFIG or ~/.kube/config)")
    p.add_argument("--prometheus-url", metavar="URL", help="Prometheus for the default server's metrics tools (default: "
                   "$PROMETHEUS_URL, else none: no metrics tools)")
    p.add_argument("--prometheus-token-file", metavar="FILE", help="bearer token file for "
                   "--prometheus-url (default: none)")
    p.add_argument("--prometheus-ca", metavar="FILE", help="CA certificate file for an https "
                   "--prometheus-url (default: the system's)")
    p.add_argument("--prometheus-service", metavar="NS/NAME:PORT", help="reach Prometheus as a "
                   "Service through the default server's kubectl proxy instead (default: none)")
    checks = p.add_mutually_exclusive_group()
    checks.add_argument("--verify", action="store_true", help="make the review (a second, "
                        "skeptical model call that answers only through review_report) also in "
                        "a replay, whose fixture then carries its answer last (default: made in "
                        "live runs, not in replays)")
    checks.add_argument("--no-verify", action="store_true", help="no review: the report's "
                        "claims and the run's blind spots are still checked by code (default: "
                        "reviewed in live runs)")
    p.add_argument("--no-preflight", action="store_true", help="skip the cluster checks made "
                   "through the server before the first model call (default: checked)")
    add_model_options(p)
    add_budget_options(p, steps=12, tool_calls=20)
    p.add_argument("--max-repeats", type=_positive(int, 1), default=3,
                   help="repeated identical calls before the final step (default: %(default)s)")
    p.add_argument("--max-result-bytes", type=_positive(int, 0), default=32768, metavar="N",
                   help="cut each tool result (after redaction) to this many bytes at a line "
                   "boundary, telling the model how to narrow the call; 0 never cuts "
                   "(default: %(default)s)")
    p.add_argument("--context-budget-tokens", type=_positive(int, 0), default=None, metavar="N",
                   help="before a request would pass this many input tokens, clear the oldest "
                   "tool results in one batch; 0 never clears (default: 40%% of the model's "
                   "context window, 16000 for a model the table does not know)")
    p.add_argument("--allow-unscoped-tool", action="append", default=[], metavar="NAME",
                   help="offer this server tool although its calls name no namespace, so the "
                   "loop cannot prove they stay in scope (repeatable; default: none)")
    p.add_argument("--read-tls-certificates", action="store_true", help="let this project's "
                   "server read the TLS Secrets the Ingresses name, to show each certificate's "
                   "subject, issuer and dates (never the key; needs the optional Role in "
                   "outputs/rbac-tls-certificates.yaml) (default: off, no Secret is read)")
    p.add_argument("--mcp-timeout", type=_positive(float, 0.1), default=30.0,
                   help="seconds per MCP tool call (default: %(default)g)")
    p.add_argument("--allow-action", action="append", default=[], choices=actions.ACTION_KINDS,
                   metavar="KIND", help="enable an action kind (gate 1), repeatable: "
                   + ", ".join(actions.ACTION_KINDS) + " (default: none enabled)")
    p.add_argument("--execute", action="store_true", help="run approved actions (gate 3) "
                   "(default: off; an approved command is printed for you to run)")
    add_watch_options(p)
    p.add_argument("--pending-approvals", metavar="PREFIX", help="hand each proposal of an "
                   "enabled kind to an operator as a pending approval file PREFIX.approval.ID.json "
                   "instead of asking on the terminal (serve sets this; default: ask on the "
                   "terminal)")
    p.add_argument("--approval-ttl", type=_positive(float, 1.0), default=900.0,
                   metavar="SECONDS", help="with --pending-approvals: how long an approval "
                   "waits before it expires (default: %(default)g)")
    add_record_options(p)
    p.add_argument("--session", metavar="FILE", help="keep the run's session (its redacted "
                   "conversation, policy and report) in FILE, mode 0600, to ask it follow-up "
                   "questions later: triage-agent ask FILE QUESTION (default: not kept)")
    add_interactive_option(p)
    return p


def add_watch_options(p):
    """--verify-timeout and --verify-quiet: the watch after an executed action (a run and `ask`)."""
    p.add_argument("--verify-timeout", type=_seconds(3600), default=180.0, metavar="SECONDS",
                   help="after an action ran (--execute), watch its target through the read "
                   "tools for at most this long and say whether it recovered; 0 turns the watch "
                   "off (default: %(default)g)")
    p.add_argument("--verify-quiet", type=_seconds(3600), default=30.0, metavar="SECONDS",
                   help="how long a completed rollout's pods must go without a restart before "
                   "the watch calls it recovered (default: %(default)g)")


def add_interactive_option(p):
    p.add_argument("--interactive", action="store_true", help="on a terminal, after the "
                   "answer or report: a follow-up> prompt, each line asked as a follow-up; an "
                   "empty line or ^D ends, ^C ends the follow-up it interrupts (default: off)")


def add_model_options(p):
    """The model and endpoint options, shared by a run and `ask`."""
    p.add_argument("--replay", metavar="FILE", help="scripted model responses; no API key needed "
                   "(default: the live API)")
    p.add_argument("--model", help=f"model (default: {DEFAULT_MODEL}, or the replay fixture's)")
    p.add_argument("--effort", choices=EFFORTS, default="medium",
                   help="output_config.effort (default: %(default)s)")
    p.add_argument("--max-tokens", type=_positive(int, 1), default=16000,
                   help="max_tokens per model call (default: %(default)s)")
    p.add_argument("--no-fallbacks", action="store_true",
                   help="no server-side model fallback (default: fallbacks on)")
    p.add_argument("--no-stream", action="store_true", help="one plain request per model call "
                   "instead of a stream of events, for proxies that cannot pass events on "
                   "(default: streamed)")
    p.add_argument("--show-thinking", action="store_true", help="stream the model's thinking to "
                   "stderr too, not only its text (default: off)")
    p.add_argument("--idle-timeout", type=_positive(float, 0.1), default=DEFAULT_IDLE_TIMEOUT,
                   metavar="SECONDS", help="streaming: a call whose stream stays silent this "
                   "long is sent again (default: %(default)g)")
    p.add_argument("--first-byte-timeout", type=_positive(float, 0.1), default=None,
                   metavar="SECONDS", help="how long to wait for the first byte of an answer "
                   "(a self-hosted model reads the whole prompt first) before the call is sent "
                   f"again (default: {LOCAL_FIRST_BYTE_TIMEOUT:g} with --api-profile compatible, "
                   "the idle timeout with anthropic)")
    p.add_argument("--base-url", metavar="URL", help="the Messages API endpoint: the hosted API, "
                   "a gateway, or a self-hosted server serving /v1/messages (llama-server, "
                   "Ollama, vLLM, LiteLLM); with bedrock or vertex, their endpoint (a VPC "
                   "endpoint, a proxy) (default: $ANTHROPIC_BASE_URL, else " + HOSTED_BASE_URL
                   + "; bedrock and vertex: the region's)")
    p.add_argument("--api-profile", choices=("anthropic", "compatible"), default=None,
                   help="what the requests carry: anthropic (fallbacks, effort, strict tools, "
                   "prompt caching) or compatible (only what self-hosted servers understand) "
                   "(default: $TRIAGE_API_PROFILE, else anthropic for a Claude model id "
                   "(claude-...) whatever the base URL, compatible for any other model)")
    p.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                   help="an extra request header for a gateway, repeatable; wins over "
                   "$ANTHROPIC_CUSTOM_HEADERS; values are never logged (default: none)")
    p.add_argument("--provider", choices=("anthropic", "bedrock", "vertex"), default=None,
                   help="where the model runs: the Anthropic API (or a gateway, or a "
                   "self-hosted server), Amazon Bedrock or Google Vertex AI; docs/"
                   "enterprise-models.md (default: anthropic)")
    p.add_argument("--region", help="bedrock: the AWS region (default: $AWS_REGION, "
                   "$AWS_DEFAULT_REGION, the AWS profile's); vertex: the location, global "
                   "allowed (default: $CLOUD_ML_REGION)")
    p.add_argument("--project", help="vertex: the Google Cloud project id (default: "
                   "$ANTHROPIC_VERTEX_PROJECT_ID, else $GOOGLE_CLOUD_PROJECT, else the "
                   "credentials': a key file's project_id, the metadata server's)")
    p.add_argument("--vertex-token-command", metavar="COMMAND", help="vertex: a command that "
                   "prints an access token, e.g. 'gcloud auth print-access-token' (default: "
                   "$GOOGLE_APPLICATION_CREDENTIALS or gcloud's application-default file, else "
                   "the metadata server)")
    p.add_argument("--price-per-mtok", metavar="INPUT,OUTPUT[,CACHE_READ,CACHE_WRITE]",
                   help="USD per million tokens for any model the built-in table and "
                   "--prices-file do not know, 0,0 for a local model; the cache prices default "
                   "to the input price (default: none: such a model's cost is unknown)")
    p.add_argument("--prices-file", metavar="FILE", help="JSON prices by model id: {\"MODEL\": "
                   "{\"input\": USD, \"output\": USD, \"cache_read\": USD, \"cache_write\": "
                   "USD}} per million tokens, the cache prices optional (default: none)")


def add_budget_options(p, *, steps, tool_calls):
    """--max-steps, --max-tool-calls (defaults differ for a run and `ask`) and --max-cost-usd."""
    p.add_argument("--max-steps", type=_positive(int, 1), default=steps,
                   help="model calls (default: %(default)s)")
    p.add_argument("--max-tool-calls", type=_positive(int, 0), default=tool_calls,
                   help="executed tool calls (default: %(default)s)")
    p.add_argument("--max-cost-usd", type=_positive(float, 0.0), default=None,
                   help="stop before a model call would cross this spend (default: no limit)")


def add_record_options(p):
    """--trace, --audit-log, --record and --json, shared by a run and `ask`."""
    p.add_argument("--trace", metavar="FILE", help="append the run's OpenTelemetry spans as "
                   "JSONL, one span per line (default: no file)")
    p.add_argument("--audit-log", metavar="FILE", help="append the audit as JSONL (default: no "
                   "file; the audit lines go to stderr either way)")
    p.add_argument("--record", metavar="FILE", help="write this live run as a replay fixture "
                   "(default: not recorded)")
    p.add_argument("--json", action="store_true", help="print the outcome as one JSON object "
                   "(default: the text report)")


def check_options(args):
    """Cross-option checks argparse cannot do; returns the namespace tuple and makes
    --kubeconfig absolute."""
    namespaces = tuple(dict.fromkeys(n.strip() for n in args.namespaces.split(",") if n.strip()))
    bad = [n for n in namespaces if not actions.is_namespace_name(n)]
    if not namespaces or bad:
        raise UsageError(f"--namespaces: {', '.join(map(repr, bad)) or 'no namespace given'} "
                         "is not a valid namespace name")
    if args.alert is not None and args.symptom is not None:
        raise UsageError("give a symptom or --alert, not both")
    if args.alert is None and not (args.symptom or "").strip():
        raise UsageError("the symptom is empty: describe what you see (or give --alert FILE)")
    if args.mcp is not None and args.read_tls_certificates:
        raise UsageError("--read-tls-certificates is passed to this project's server; with --mcp, "
                         "give the server's own flag in that command instead")
    if args.replay and args.record:
        raise UsageError("--record writes a live run; it cannot be combined with --replay")
    if args.execute and not args.allow_action:
        raise UsageError("--execute without --allow-action can never run anything: enable the "
                         "action kinds it may run with --allow-action KIND")
    if args.pending_approvals and args.execute:
        raise UsageError("--pending-approvals hands proposals to serve, which runs approved "
                         "ones itself: it cannot be combined with --execute")
    if getattr(args, "interactive", False) and not sys.stdin.isatty():
        raise UsageError("--interactive asks at a follow-up> prompt: it needs a terminal on "
                         "stdin (ask a session later with: triage-agent ask FILE QUESTION)")
    check_endpoint(args)
    for flag in ("context", "kubeconfig"):
        value = getattr(args, flag)
        if value is not None and (not value or value.startswith("-")):
            raise UsageError(f"--{flag}: {value!r} is not a usable value")
    check_prometheus(args)
    if args.kubeconfig:  # the server, the rendered commands and the gate's runner share it
        args.kubeconfig = os.path.abspath(args.kubeconfig)
        if not os.path.isfile(args.kubeconfig):
            raise UsageError(f"--kubeconfig {args.kubeconfig}: no such file")
    if 0 < args.max_result_bytes < 1024:
        raise UsageError(f"--max-result-bytes {args.max_result_bytes}: a result cut that short "
                         "leaves the model nothing to read; give 1024 or more (0: no cap)")
    return namespaces


PROMETHEUS_FLAGS = ("prometheus_url", "prometheus_token_file", "prometheus_ca", "prometheus_service")


def check_prometheus(args):
    """The --prometheus-* options: for the default server only, one way to Prometheus, files that
    exist (made absolute: the server may run elsewhere). PROMETHEUS_URL is ignored with --mcp."""
    given = [f for f in PROMETHEUS_FLAGS if getattr(args, f, None) is not None]
    if args.mcp is not None:
        if given:
            raise UsageError(f"--{given[0].replace('_', '-')} configures this project's server;"
                             " with --mcp, give it in the server's own command")
        return
    if args.prometheus_url is None and not args.prometheus_service:
        args.prometheus_url = os.environ.get("PROMETHEUS_URL") or None
    if args.prometheus_url and args.prometheus_service:
        raise UsageError("--prometheus-url (or PROMETHEUS_URL) and --prometheus-service: give one")
    for flag in ("prometheus_token_file", "prometheus_ca"):
        value = getattr(args, flag)
        if value is None:
            continue
        if not args.prometheus_url:
            raise UsageError(f"--{flag.replace('_', '-')} goes with --prometheus-url")
        if not os.path.isfile(value):
            raise UsageError(f"--{flag.replace('_', '-')} {value}: no such file")
        setattr(args, flag, os.path.abspath(value))


def check_endpoint(args):
    """The endpoint options: sets args.provider, base_url, api_profile (model/providers.py),
    first_byte_timeout and prices (None or a PriceTable)."""
    from triage_agent.model import providers
    from triage_agent.telemetry import prices
    try:
        providers.settle(args, os.environ, default_model=DEFAULT_MODEL)
    except providers.ProviderError as exc:
        raise UsageError(str(exc)) from None
    if args.first_byte_timeout is None:
        args.first_byte_timeout = (LOCAL_FIRST_BYTE_TIMEOUT if args.api_profile == "compatible"
                                   else args.idle_timeout)
    other, models = None, {}
    try:
        other = prices.parse_per_mtok(args.price_per_mtok) if args.price_per_mtok else None
    except prices.PriceError as exc:
        raise UsageError(f"--price-per-mtok: {exc}") from None
    try:
        models = prices.load_prices_file(args.prices_file) if args.prices_file else {}
    except prices.PriceError as exc:
        raise UsageError(f"--prices-file: {exc}") from None
    source = " and ".join(filter(None, [
        f"--prices-file {args.prices_file}" if args.prices_file else "",
        f"--price-per-mtok {args.price_per_mtok}" if args.price_per_mtok else ""]))
    args.prices = prices.PriceTable(models, other, source) if source else None


def server_argv(args, namespaces):
    """The MCP server command: --mcp split like a shell would, or this project's server."""
    if args.mcp is not None:  # given, even empty: an empty command is a mistake, not the default
        try:
            argv = shlex.split(args.mcp)
        except ValueError as exc:
            raise UsageError(f"--mcp: {exc}") from None
        if not argv:
            raise UsageError("--mcp: the command is empty (leave --mcp out to run this "
                             "project's server)")
        return argv
    argv = [sys.executable, "-m", "mcp_kubectl_server", "--allow-namespaces",
            ",".join(namespaces), "--quiet"]
    if args.context:
        argv += ["--context", args.context]
    if args.kubeconfig:
        argv += ["--kubeconfig", args.kubeconfig]
    for flag in PROMETHEUS_FLAGS:
        if getattr(args, flag, None):
            argv += ["--" + flag.replace("_", "-"), getattr(args, flag)]
    if args.read_tls_certificates:
        argv.append("--read-tls-certificates")
    return argv
