"""The CLI's --read-tls-certificates: passed on to this project's server only, off by default,
and a usage error with --mcp (another server's flags are that command's business)."""

import subprocess
import sys

import pytest

from tests.agent.cli.test_metrics_options import options
from triage_agent.options import UsageError, server_argv


def test_off_by_default_and_passed_on_when_given(monkeypatch):
    args, namespaces = options(monkeypatch=monkeypatch)
    assert "--read-tls-certificates" not in server_argv(args, namespaces)
    args, namespaces = options("--read-tls-certificates", monkeypatch=monkeypatch)
    argv = server_argv(args, namespaces)
    assert argv[argv.index("mcp_kubectl_server") - 1:argv.index("mcp_kubectl_server") + 1] == ["-m", "mcp_kubectl_server"]
    assert argv.count("--read-tls-certificates") == 1


def test_with_another_server_it_is_a_usage_error(monkeypatch):
    with pytest.raises(UsageError, match="--read-tls-certificates is passed to this project's server"):
        options("--read-tls-certificates", "--mcp", "my-server", monkeypatch=monkeypatch)


def test_the_real_cli_exits_2_with_the_reason(tmp_path):
    done = subprocess.run([sys.executable, "-m", "triage_agent", "symptom", "--namespaces", "prod",
                           "--replay", str(tmp_path / "none.json"), "--mcp", "x", "--read-tls-certificates"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--read-tls-certificates is passed to this project's server" in done.stderr
