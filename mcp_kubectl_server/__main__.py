"""Command line for the read-only kubectl MCP server: parse options, check them, serve stdio.

    python3 -m mcp_kubectl_server --allow-namespaces NS[,NS...] [--context CTX]
        [--kubeconfig PATH] [--kubectl PATH] [--timeout SECONDS] [--quiet] [--no-cluster-tools]
        [--read-tls-certificates]
        [--prometheus-url URL [--prometheus-token-file FILE] [--prometheus-ca FILE]
         | --prometheus-service NS/NAME:PORT] [--check]

--context, --kubeconfig and --kubectl go to the one `kubectl proxy` child (kubectl alone reads
the kubeconfig); --timeout bounds each tool call's reads together. With a --prometheus-* option
the metrics tools are offered too (read/prometheus.py). When it starts serving, the
server launches the proxy and imports the rest of itself while kubectl starts (nothing waits for
the proxy before the first read); it stops the proxy however it ends: EOF, SIGTERM, SIGHUP, ^C.
Exit codes: 0 stdin closed (or --check passed), 1 --check failed, 2 bad options, 130 interrupted,
128+N stopped by signal N.
"""

import argparse
import json
import os
import signal
import sys

from mcp_kubectl_server.read.reader import ReadError, Reader
from mcp_kubectl_server.validate import check_label


def build_parser():
    """The argument parser (docs/flags.md is generated from it)."""
    parser = argparse.ArgumentParser(prog="mcp-kubectl-server",
                                     description="Read-only kubectl tools served over MCP (stdio).")
    parser.add_argument("--allow-namespaces", required=True, metavar="NS[,NS...]",
                        help="comma-separated namespaces the tools may read")
    parser.add_argument("--context", help="kubeconfig context (default: the current context)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: kubectl's own, $KUBECONFIG "
                        "or ~/.kube/config)")
    parser.add_argument("--kubectl", default="kubectl", help="kubectl binary (default: kubectl on PATH)")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds for one tool call's reads, and for the proxy to start (default 20)")
    parser.add_argument("--quiet", action="store_true", help="no audit lines on stderr")
    parser.add_argument("--no-cluster-tools", action="store_true",
                        help="do not offer the cluster-scoped tools (get_nodes, describe_node,"
                             " get_priority_classes, get_api_resources), and keep every cluster-scoped"
                             " path out of the proxy's allow-list (get_ingresses, get_rbac and"
                             " get_custom_resources then say what they could not check)")
    parser.add_argument("--read-tls-certificates", action="store_true",
                        help="let get_ingresses read the TLS Secrets its Ingresses name, one by name, to"
                             " report each certificate's subject, issuer and dates (the key is never"
                             " read out or shown); off by default: no Secret is read at all")
    metrics = parser.add_argument_group("metrics (the metrics tools are offered only with one of these)")
    metrics.add_argument("--prometheus-url", metavar="URL", help="Prometheus' base URL, e.g. "
                         "http://prometheus.monitoring:9090 (default: none)")
    metrics.add_argument("--prometheus-token-file", metavar="FILE", help="a bearer token for "
                         "--prometheus-url, read again at every request (default: none)")
    metrics.add_argument("--prometheus-ca", metavar="FILE", help="the CA certificate(s) that signed "
                         "an https --prometheus-url (default: the system's)")
    metrics.add_argument("--prometheus-service", metavar="NS/NAME:PORT", help="reach Prometheus as a "
                         "Service through this server's kubectl proxy, on its query endpoints only "
                         "(default: none)")
    parser.add_argument("--check", action="store_true",
                        help="read the cluster's /version through the proxy, then list each "
                        "allowed namespace's pods (get_pods); print each result and exit")
    return parser


def parse_args(argv, parser=None):
    """The checked options; exits 2 (argparse's usage error) for what cannot work. `parser`:
    build_parser()'s, unless the caller gives one of its own making."""
    parser = parser or build_parser()
    args = parser.parse_args(argv)
    namespaces = [ns.strip() for ns in args.allow_namespaces.split(",") if ns.strip()]
    problems = [p for p in (check_label("--allow-namespaces", ns) for ns in namespaces) if p]
    if not namespaces:
        problems.append("--allow-namespaces: give at least one namespace")
    if not 0 < args.timeout <= 600:
        problems.append("--timeout: must be more than 0 and at most 600 seconds")
    for flag in ("context", "kubeconfig", "kubectl"):
        value = getattr(args, flag)
        if value is not None and (not value or value.startswith("-") or "\n" in value):
            problems.append(f"--{flag}: {value!r} is not a usable value")
    problems += prometheus_problems(args)
    if problems:
        parser.error("; ".join(problems))
    args.namespaces = list(dict.fromkeys(namespaces))
    return args


def prometheus_problems(args):
    """What is wrong with the --prometheus-* options (a list of messages)."""
    from mcp_kubectl_server.read.prometheus import parse_service
    problems = []
    if args.prometheus_url and args.prometheus_service:
        problems.append("--prometheus-url and --prometheus-service: give one of them")
    if (args.prometheus_token_file or args.prometheus_ca) and not args.prometheus_url:
        problems.append("--prometheus-token-file and --prometheus-ca go with --prometheus-url")
    for flag in ("prometheus_token_file", "prometheus_ca"):
        value = getattr(args, flag)
        if value is not None and not os.path.isfile(value):
            problems.append(f"--{flag.replace('_', '-')}: {value!r} is not a readable file")
    if args.prometheus_service is not None:
        try:
            parse_service(args.prometheus_service)
        except ValueError as exc:
            problems.append(f"--prometheus-service: {exc}")
    return problems


def prometheus_client(args):
    """The Prometheus client the options name, or None (ValueError for a URL it cannot use)."""
    from mcp_kubectl_server.read.prometheus import DirectPrometheus, ServicePrometheus
    if args.prometheus_service:
        return ServicePrometheus(args.prometheus_service)
    if args.prometheus_url:
        return DirectPrometheus(args.prometheus_url, token_file=args.prometheus_token_file,
                                ca_file=args.prometheus_ca, timeout=args.timeout)
    return None


def protocol_line():
    """Which MCP revisions this server speaks on stdio, for --check."""
    from mcp_kubectl_server.server import MODERN_VERSIONS, PROTOCOL_VERSIONS
    return (f"MCP over stdio: {', '.join(MODERN_VERSIONS)} (stateless: server/discover, per-request"
            f" _meta) and {', '.join(PROTOCOL_VERSIONS)} (initialize handshake)")


def check(reader, namespaces, err=None):
    """Health check, on stderr: the MCP revisions served, the cluster's version read through the
    proxy (or why it could not be), then one line per allowed namespace: the header of its pod
    list as get_pods gives it, or why not (a namespace that does not exist among them), and with
    a Prometheus the first line of list_metrics in the first namespace (to `err`, default
    sys.stderr). 0 when all of it passed, else 1."""
    from mcp_kubectl_server.redact import redact
    from mcp_kubectl_server.tools.registry import run_tool
    from mcp_kubectl_server.tools.pods import NAMESPACE_UNVERIFIED
    err = err or sys.stderr
    print(protocol_line(), file=err)
    try:
        version = reader.get_json("/version")
    except ReadError as exc:
        print(exc, file=err)
        return 1
    print(json.dumps({"serverVersion": version}, indent=2), file=err)
    code = 0
    for namespace in namespaces:
        text, is_error = run_tool(reader.for_call(), "get_pods", {"namespace": namespace})
        lines = redact(text).splitlines() or [""]
        # the header of a pod list, or the error; and the note when the namespace is unverified
        line = " ".join(lines[:1] + [ln for ln in lines[1:] if NAMESPACE_UNVERIFIED in ln])
        print(f"namespace {namespace}: {'check failed: ' if is_error else ''}{line}",
              file=err)
        code = 1 if is_error else code
    if reader.prometheus is not None:  # what the triage CLI's preflight asks too
        text, is_error = run_tool(reader.for_call(), "list_metrics",
                                  {"namespace": namespaces[0], "match": "container_"})
        first = (redact(text).splitlines() or [""])[0]
        print(f"prometheus: {'check failed: ' if is_error else ''}{first}", file=err)
        code = 1 if is_error else code
    return code


class _Stopped(BaseException):
    """Raised in the main thread by SIGTERM/SIGHUP, so that the proxy is stopped on the way out."""

    def __init__(self, signum):
        super().__init__(signum)
        self.code = 128 + signum


def _raise_stopped(signum, frame):
    raise _Stopped(signum)


def open_reader(args, env=None):
    """The Reader the options name: its kubectl proxy child gets `env` (None: this process's
    environment). ValueError/OSError for a Prometheus option it cannot use."""
    return Reader(args.kubectl, context=args.context, kubeconfig=args.kubeconfig,
                  timeout=args.timeout, namespaces=args.namespaces,
                  cluster_scoped=not args.no_cluster_tools, prometheus=prometheus_client(args),
                  read_tls=args.read_tls_certificates, env=env)


def run(args, reader, *, stdin, stdout, stderr):
    """Check, or serve MCP on these streams (bytes in, bytes out, text for stderr) until stdin
    ends; the exit code. The reader is closed (its proxy stopped) however this ends. main() gives
    it the process's stdio; the tests also run it in a thread over pipes."""
    try:
        if args.check:
            return check(reader, args.namespaces, stderr)
        reader.prepare()  # kubectl's start (about one kubectl run) overlaps what follows
        from mcp_kubectl_server.tools import registry  # imported after the launch, for the same reason
        from mcp_kubectl_server.server import Server
        tools = registry.load(cluster_tools=not args.no_cluster_tools,
                              metrics_tools=reader.prometheus is not None)
        server = Server(reader, allowed_namespaces=args.namespaces, stdin=stdin, stdout=stdout,
                        stderr=stderr, quiet=args.quiet, tools=tools)
        return server.serve()
    finally:
        reader.close()


def main(argv=None):
    """Run the server; returns the process exit code."""
    args = parse_args(argv)
    try:
        reader = open_reader(args)
    except (ValueError, OSError) as exc:  # a URL it cannot use, a --prometheus-ca it cannot load
        print(f"mcp-kubectl-server: error: --prometheus-url/--prometheus-ca: {exc}", file=sys.stderr)
        return 2
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_stopped)
    protocol_out = sys.stdout.buffer
    if not args.check:  # --check returns to its caller, whose stdout stays its own
        sys.stdout = sys.stderr  # a stray print must never corrupt the protocol stream
    try:
        code = run(args, reader, stdin=sys.stdin.buffer, stdout=protocol_out, stderr=sys.stderr)
    except KeyboardInterrupt:
        code = 130
    except _Stopped as stop:
        code = stop.code
    if args.check:
        return code
    # Every reply and audit line is flushed and the proxy is stopped: leave without interpreter
    # teardown, which the client waits for (about 60 ms) and which, when a signal stopped us
    # mid-read of stdin, aborts on the stdin thread's lock.
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(main())
