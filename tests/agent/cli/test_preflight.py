"""The preflight through the real CLI, the real MCP server and real kubectl: each broken cluster
side fails with its cause and what to do before the model is called once (a live run against
the fake Messages API, which counts the requests), and --json still prints one outcome."""

import contextlib
import http.server
import io
import json
import sys
from argparse import Namespace

import pytest

from fixtures.http_thread import ServerThread

from mcp_kubectl_server.tools import pods as tools_pods
from mcp_kubectl_server.server import SERVER_INFO
from tests.support.fake_messages_api import FakeMessagesApi
from tests.agent.cli.test_cli import OUTCOME_SCHEMA, ROOT, replay_args, run_cli_here
from tests.agent.cli.test_live import KEY, crashloop_responses
from tests.server.test_check import (closed_port_kubeconfig, forbidden_namespaces_cluster,
                                     kubeconfig_for)
from triage_agent import cli, preflight, schema
from triage_agent.policy import Policy


def live(*args, env=None):
    """A live run (fake API) with --json: (process, outcome, number of model requests)."""
    with FakeMessagesApi(crashloop_responses()) as api:
        out = run_cli_here("checkout pods in prod keep restarting", "--json", *args,
                           env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.url,
                                **(env or {})})
    assert "Traceback" not in out.stderr, out.stderr
    outcome = json.loads(out.stdout)   # exactly one object
    assert schema.validate(outcome, OUTCOME_SCHEMA) == []
    return out, outcome, len(api.requests)


def failed(out, outcome, requests, cause, advice):
    assert (out.returncode, outcome["stop"], requests) == (2, "preflight_failed", 0), out.stderr
    # the model endpoint's lines (a fake API: not the hosted one) come first; then the server's
    lines = [line for line in out.stderr.splitlines()
             if not line.startswith("triage-agent: model ")]
    assert lines[0].startswith("triage-agent: MCP server mcp-kubectl-server")   # it started
    assert lines[1].startswith("triage-agent: preflight failed: namespace ") and cause in lines[1]
    assert lines[2].startswith("triage-agent: what to do: ") and advice in lines[2]
    assert len(lines) == 3
    assert cause in outcome["error"] and advice in outcome["error"] and outcome["steps"] == 0


def test_kubectl_missing_from_path(shared_sim, tmp_path):
    sim = shared_sim("crashloop")
    out = live("--namespaces", "prod", "--kubeconfig", sim.kubeconfig,
               env={"PATH": str(tmp_path)})   # an empty directory: no kubectl on it
    failed(*out, "kubectl is not installed or not found", "install kubectl")


def test_unreachable_cluster(tmp_path):
    kubeconfig, port = closed_port_kubeconfig(tmp_path)
    out = live("--namespaces", "prod", "--kubeconfig", str(kubeconfig))
    failed(*out, f"cannot reach the Kubernetes API server (dial tcp 127.0.0.1:{port}: connect: "
           "connection refused)",
           "the cluster did not answer")


def test_a_kubeconfig_that_is_not_one(tmp_path):
    broken = tmp_path / "kubeconfig"
    broken.write_text("this is not a kubeconfig\n")
    out = live("--namespaces", "prod", "--kubeconfig", str(broken))
    failed(*out, "error loading config file", "point --kubeconfig (or KUBECONFIG) at")


def test_a_missing_kubeconfig_is_a_usage_error(tmp_path):
    out, outcome, requests = live("--namespaces", "prod", "--kubeconfig",
                                  str(tmp_path / "nope"))
    assert (out.returncode, outcome["stop"], requests) == (2, "usage_error", 0)
    assert f"--kubeconfig {tmp_path / 'nope'}: no such file" in outcome["error"]


def test_unknown_context(shared_sim):
    sim = shared_sim("crashloop")
    out = live("--namespaces", "prod", "--kubeconfig", sim.kubeconfig, "--context", "prdo-eu")
    failed(*out, 'error: context "prdo-eu" does not exist',
           "kubectl config get-contexts")


@contextlib.contextmanager
def rejecting_cluster(tmp_path):
    """A local API server that answers every request 401 Unauthorized, as one does for expired
    credentials; yields a kubeconfig pointing at it."""
    status = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                         "message": "Unauthorized", "reason": "Unauthorized", "code": 401})

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(401)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(status)))
            self.end_headers()
            self.wfile.write(status.encode())

        def log_message(self, *args):
            pass

    serving = ServerThread(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)).start()
    try:
        yield kubeconfig_for(tmp_path, serving.server.server_address[1])
    finally:
        serving.stop()


def test_credentials_the_cluster_rejects(tmp_path):
    with rejecting_cluster(tmp_path) as kubeconfig:
        out = live("--namespaces", "prod", "--kubeconfig", str(kubeconfig))
    failed(*out, "the cluster rejected the credentials (401 Unauthorized",
           "the cluster rejected these credentials")


def test_mistyped_namespace(shared_sim):
    sim = shared_sim("crashloop")
    out = live("--namespaces", "prod,prdo", "--kubeconfig", sim.kubeconfig)
    failed(*out, "namespace prdo: namespace prdo does not exist in this cluster",
           "check the spelling in --namespaces")


def test_a_namespace_the_credentials_cannot_verify_is_a_warning(shared_sim, tmp_path):
    sim = shared_sim(forbidden_namespaces_cluster(tmp_path))
    out, outcome, requests = live("--namespaces", "prod,prdo", "--kubeconfig", sim.kubeconfig)
    # four steps, then the review a live run makes
    assert out.returncode == 0 and outcome["stop"] == "report" and requests == 5, out.stderr
    warnings = [line for line in out.stderr.splitlines() if "warning" in line]
    assert warnings == ["triage-agent: warning: namespace prdo has no pods and these credentials "
                        "cannot read its Namespace object, so it may not exist: check the "
                        "spelling in --namespaces"]
    assert "preflight passed: the cluster answered and pods can be listed in prod, prdo" in \
        out.stderr


def test_a_healthy_cluster_passes_and_the_replay_runs(shared_sim):
    out = run_cli_here(*replay_args(shared_sim("crashloop"), "crashloop"))
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines()[1] == ("triage-agent: preflight passed: the cluster answered "
                                          "and pods can be listed in prod")
    assert out.stderr.splitlines()[2].startswith("[step 1/12] ")   # then the run


def test_no_preflight_runs_on_and_progress_shows_the_tool_error_s_first_line(tmp_path):
    kubeconfig, port = closed_port_kubeconfig(tmp_path)
    args = replay_args(Namespace(kubeconfig=str(kubeconfig)), "crashloop", "--no-preflight",
                       "--max-steps", "2")
    out = run_cli_here(*args)
    assert out.returncode == 3 and "preflight skipped: --no-preflight" in out.stderr
    [line] = [ln for ln in out.stderr.splitlines() if ln.startswith("[audit] step 1")]
    assert " · get_pods namespace=prod · executed · error · " in line
    assert f" bytes · cannot reach the Kubernetes API server (dial tcp 127.0.0.1:{port}: " \
        "connect: connection refused): the cluster is down" in line
    assert line.endswith("\u2026 · tool_use_id=toolu_01pods")   # the first line, cut to 160


def test_the_preflight_reads_the_note_our_server_writes():
    assert preflight.NAMESPACE_UNVERIFIED == tools_pods.NAMESPACE_UNVERIFIED


class Tools:
    """The MCP client's call() and server_info, answering every get_pods with one result."""

    def __init__(self, text, is_error, name=preflight.OUR_SERVER):
        self.result, self.calls = (text, is_error), []
        self.server_info = {"name": name, "version": "1"}

    def call(self, name, arguments):
        self.calls.append((name, arguments))
        return self.result


@pytest.mark.parametrize("text,advice", [
    ("the cluster rejected the credentials (401 Unauthorized: Unauthorized): the token ...",
     "rejected these credentials"),
    ('the cluster refused this read (403 Forbidden): pods is forbidden: User "u" cannot list '
     'resource "pods"', "grant these credentials get and list on pods"),
    ("the cluster did not answer within 20s and the read was stopped: the cluster is slow or "
     "unreachable", "the cluster did not answer"),
    ("the kubectl proxy exited (code 1) and exited again after one restart: E1201 dial tcp: "
     "connection refused", "--check --allow-namespaces prod"),
    ("something new\nsecond line", "kubectl get pods -n prod"),
    ("kubectl failed (exit 1): Unable to connect to the server: tls: failed to verify "
     "certificate: x509: certificate signed by unknown authority", "certificate-authority"),
])
def test_advice_follows_what_the_cause_says(text, advice):
    with pytest.raises(preflight.PreflightError) as caught:
        preflight.run_preflight(Tools(text, True), ("prod", "staging"))
    assert caught.value.cause == f"namespace prod: {text.splitlines()[0]}"
    assert advice in caught.value.advice and not caught.value.server_failed


def test_a_server_that_dies_during_the_preflight_exits_4_with_one_outcome(capsys):
    tools = Tools("the MCP server exited during this call (exit code 1); it was restarted, "
                  "the call did not complete", True)
    args = Namespace(no_preflight=False, mcp=None, json=True, model=None)
    code = cli.preflight(args, Policy(namespaces=("prod",)), tools, sys.stderr)
    captured = capsys.readouterr()
    assert code == 4 and json.loads(captured.out)["stop"] == "mcp_error"
    assert "mcp_kubectl_server --check --allow-namespaces prod" in captured.err


def test_a_third_party_server_skips_the_preflight_and_says_so():
    tools, err = Tools("unused", True, name="kubernetes-mcp-server"), io.StringIO()
    args = Namespace(no_preflight=False, mcp="other-server --read-only", json=False, model=None)
    assert cli.preflight(args, Policy(namespaces=("prod",)), tools, err) is None
    assert tools.calls == [] and "preflight skipped: --mcp names another server" in \
        err.getvalue()


def test_our_own_server_named_by_mcp_is_checked_too(shared_sim):
    sim = shared_sim("crashloop")
    command = (f"{sys.executable} -m mcp_kubectl_server --allow-namespaces prod,prdo "
               f"--kubeconfig {sim.kubeconfig} --quiet")
    out, outcome, requests = live("--namespaces", "prod,prdo", "--mcp", command,
                                  env={"PYTHONPATH": str(ROOT)})
    failed(out, outcome, requests, "namespace prdo does not exist", "check the spelling")


def test_the_server_name_the_preflight_looks_for_is_ours():
    assert preflight.OUR_SERVER == SERVER_INFO["name"]



def test_the_preflight_reads_are_in_the_audit_log_as_step_0(shared_sim, tmp_path):
    audit = tmp_path / "audit.jsonl"
    out = run_cli_here(*replay_args(shared_sim("crashloop"), "crashloop", "--namespaces", "prod",
                                    "--audit-log", str(audit)))
    assert out.returncode == 0, out.stderr
    entries = [json.loads(line) for line in audit.read_text().splitlines()]
    preflight_entries = [e for e in entries if e["decision"] == "preflight"]
    assert [(e["step"], e["tool"], e["arguments"]) for e in preflight_entries] == [
        (0, "get_pods", {"namespace": "prod"})]
    assert preflight_entries[0]["is_error"] is False and preflight_entries[0]["bytes"] > 0
    assert entries[0] == preflight_entries[0]                # before anything the model asked
    assert "[audit] step 0" not in out.stderr    # on stderr the preflight's own line says it
