"""The cluster side, checked through the MCP server before the first model call, so that a
missing kubectl, an unreachable cluster, rejected credentials, a wrong kubeconfig or context, or
a mistyped namespace ends the run loudly before any money is spent.

    for each namespace in scope:   get_pods {namespace}        (this project's own server)
        an error result     -> PreflightError: the server's first line is the cause, and what
                               to do is picked by what that line says (ADVICE)
        "could not check whether namespace NS exists"
                            -> a warning: the credentials list pods (none there) but cannot
                               read the Namespace object (403), so a typo cannot be ruled out
        a pod list          -> the namespace exists and its pods can be listed
    when the server offers the metrics tools (it has a Prometheus):
                    list_metrics {namespace, match: container_}  (the first namespace)
        an error result     -> PreflightError: Prometheus is down, slow, refuses the token or
                               is not Prometheus (the server asked /api/v1/status/buildinfo)
        a list              -> "Prometheus answered", with its first line

The checks are ordinary tool calls, so they go where every read goes (the server's reader) and
into the audit log like every other read, as step 0 with decision `preflight` (on stderr the
preflight's own lines say it; the model did not ask for them, so they are not in its
conversation, its budgets or the trace's tool spans). Only our server's tools are known well enough to check this way: when the server that
answered is another one (its serverInfo name is not OUR_SERVER) the CLI skips the preflight and
says so. A server that only claims the name is checked like ours and fails on its own words.
`before_run` is the CLI's side: whether to check, the lines it says, and the exit code (2, or 4
when the server died) of a failure.
"""

from dataclasses import dataclass, field

from mcp_kubectl_server.redact import redact

from triage_agent.lines import first_line
from triage_agent.mcp.client import McpError

OUR_SERVER = "mcp-kubectl-server"   # mcp_kubectl_server.server.SERVER_INFO["name"]
# the note our server's get_pods adds when the Namespace object could not be read
# (mcp_kubectl_server.handlers.NAMESPACE_UNVERIFIED; a test pins that the two agree)
NAMESPACE_UNVERIFIED = "could not check whether namespace"
SERVER_FAILED = "the MCP server exited"   # it could not run: exit 4, not 2
# (what the cause says, lower-cased) -> what the operator can do; the first match wins
ADVICE = (
    (("does not exist in this cluster",),
     "check the spelling in --namespaces (`kubectl get namespaces` lists them)"),
    (("not installed or not found", "executable file not found"),
     "install kubectl or put it on the PATH this command runs with"),
    (("context was not found", "context \""),
     "name a context the kubeconfig has (`kubectl config get-contexts`) in --context"),
    (("error loading config", "no such file", "invalid configuration",
      "no configuration has been provided"),
     "point --kubeconfig (or KUBECONFIG) at a readable kubeconfig for the cluster"),
    (("unauthorized", "must be logged in"),
     "the cluster rejected these credentials: log in again or renew them, or use another "
     "--context"),
    (("x509", "tls: failed to verify"),
     "the cluster's TLS certificate is not trusted: check certificate-authority for this cluster "
     "in the kubeconfig"),
    (("forbidden",),
     "grant these credentials get and list on pods in that namespace (see "
     "outputs/rbac-readonly.yaml) or leave it out of --namespaces"),
    (("kubectl proxy exited", "kubectl proxy` exited", "proxy stopped answering"),
     "kubectl could not keep serving this cluster: `python3 -m mcp_kubectl_server --check "
     "--allow-namespaces NS` with the same --context and --kubeconfig shows why"),
    (("cannot reach", "did not answer", "refused", "unable to connect", "no such host", "i/o timeout",
      "timed out", "dial tcp", "no route to host"),
     "the cluster did not answer: check that it is running and that --context and "
     "--kubeconfig point at it (`kubectl cluster-info`)"),
    (("the mcp server exited",),
     "the MCP server stopped while checking: run `python3 -m mcp_kubectl_server --check "
     "--allow-namespaces NS` to see why"),
)
FALLBACK = "check that `kubectl get pods -n NS` works with the same --context and --kubeconfig"


class PreflightError(Exception):
    """The cluster side is not usable: `cause` (the server's own words) and `advice`."""

    def __init__(self, cause, advice, *, server_failed=False):
        super().__init__(f"{cause} (what to do: {advice})")
        self.cause, self.advice, self.server_failed = cause, advice, server_failed


METRICS_PROBE = {"match": "container_"}  # cAdvisor's series: a small list that proves the scrape
METRICS_ADVICE = ("check --prometheus-url (or PROMETHEUS_URL), --prometheus-token-file and "
                  "--prometheus-ca, or --prometheus-service, as the error says; leave them out "
                  "to triage without the metrics tools")


@dataclass
class Preflight:
    """What the checks found: namespaces whose pods were listed, warnings, and the first line of
    the Prometheus check ('' when the server has no metrics tools)."""
    listed: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    prometheus: str = ""


def advice_for(cause, namespace):
    """What the operator can do about `cause` (a failed check's first line)."""
    lowered = cause.lower()
    advice = next((advice for needles, advice in ADVICE
                   if any(needle in lowered for needle in needles)), FALLBACK)
    return advice.replace(" NS", f" {namespace}")


def run_preflight(tools, namespaces, *, audit=None):
    """Check each namespace through the server's get_pods; PreflightError on the first failure.
    `audit(**fields)` records each call (records.Recorder.audit)."""
    found = Preflight()
    for namespace in namespaces:
        text, is_error = tools.call("get_pods", {"namespace": namespace})
        # redact before first_line cuts it: the server may be a third party that does not redact
        text = redact(text if isinstance(text, str) else str(text))
        if audit is not None:
            audit(show=False, step=0, tool="get_pods", arguments={"namespace": namespace},
                  decision="preflight", is_error=bool(is_error), bytes=len(text.encode()),
                  **({"error": first_line(text, 160)} if is_error else {}))
        if is_error:
            cause = first_line(text, 400) or "the server gave no reason"
            raise PreflightError(f"namespace {namespace}: {cause}", advice_for(cause, namespace),
                                 server_failed=cause.startswith(SERVER_FAILED))
        if NAMESPACE_UNVERIFIED in text:
            found.warnings.append(
                f"namespace {namespace} has no pods and these credentials cannot read its "
                f"Namespace object, so it may not exist: check the spelling in --namespaces")
        else:
            found.listed.append(namespace)
    found.prometheus = check_prometheus(tools, namespaces[0], audit=audit)
    return found


def check_prometheus(tools, namespace, *, audit=None):
    """'' when the server offers no metrics tools; else the first line of list_metrics, or
    PreflightError when Prometheus did not answer as Prometheus."""
    offered = {t.get("name") for t in tools.list()} if hasattr(tools, "list") else set()
    if "list_metrics" not in offered:
        return ""
    arguments = dict(METRICS_PROBE, namespace=namespace)
    text, is_error = tools.call("list_metrics", arguments)
    text = text if isinstance(text, str) else str(text)
    if audit is not None:
        audit(show=False, step=0, tool="list_metrics", arguments=arguments, decision="preflight",
              is_error=bool(is_error), bytes=len(text.encode()),
              **({"error": first_line(text, 160)} if is_error else {}))
    if is_error:
        raise PreflightError(f"Prometheus: {first_line(text, 400) or 'no reason given'}", METRICS_ADVICE,
                             server_failed=text.startswith(SERVER_FAILED))
    return first_line(text, 300)


def before_run(tools, namespaces, *, skip, say, fail, audit=None):
    """The CLI's preflight: None to go on, or the exit code once `fail(stop, error, advice)` has
    reported the failure. Skipped (and `say` says so) with --no-preflight or another server."""
    ours = (getattr(tools, "server_info", None) or {}).get("name") == OUR_SERVER
    if skip or not ours:
        say("preflight skipped: " + ("--no-preflight" if skip else "--mcp names another server, "
                                     "whose tools and cluster connection are its own"))
        return None
    try:
        found = run_preflight(tools, namespaces, audit=audit)
    except PreflightError as exc:
        stop, code = ("mcp_error", 4) if exc.server_failed else ("preflight_failed", 2)
        fail(stop, f"preflight failed: {exc.cause}", exc.advice)
        return code
    except McpError as exc:
        fail("mcp_error", f"the MCP server failed during the preflight: {exc}", None)
        return 4
    for warning in found.warnings:
        say(f"warning: {warning}")
    say("preflight passed: the cluster answered and pods can be listed in " + ", ".join(namespaces))
    if found.prometheus:
        say(f"preflight: Prometheus answered: {found.prometheus}")
    return None
