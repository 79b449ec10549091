"""outputs/serve-deployment.yaml and outputs/alertmanager-receiver.yaml: the in-cluster service
runs `serve` under the read-only ServiceAccount, takes the API key only from a Secret, requires
a webhook token, and the Alertmanager receiver points at it with that token."""

from pathlib import Path

from tests.support.yaml_docs import load_documents
from triage_agent.serve import service as serve

OUTPUTS = Path(__file__).resolve().parents[2] / "outputs"


def documents(name):
    return load_documents((OUTPUTS / name).read_text())


def test_the_deployment_runs_serve_under_the_read_only_service_account():
    deployment, service = documents("serve-deployment.yaml")
    rbac = {(d["kind"], d["metadata"]["name"]) for d in documents("rbac-readonly.yaml")}
    assert deployment["kind"] == "Deployment" and service["kind"] == "Service"
    pod = deployment["spec"]["template"]["spec"]
    assert ("ServiceAccount", pod["serviceAccountName"]) in rbac
    assert deployment["metadata"]["namespace"] == "triage-agent"
    [container] = pod["containers"]
    args = container["args"]
    assert args[0] == "serve" and "--execute" not in args
    flags = dict(zip(args[1::2], args[2::2]))
    assert flags["--listen"] == "0.0.0.0:9095" and flags["--namespaces"]
    # listening beyond loopback needs a token (serve refuses to start otherwise): it is mounted
    token_dir = str(Path(flags["--token-file"]).parent)
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    [token_volume] = [name for name, path in mounts.items() if path == token_dir]
    assert volumes[token_volume]["secret"]["secretName"] == "triage-agent-webhook"
    assert mounts[next(n for n, p in mounts.items() if p == flags["--outbox"])]
    # the operators file (hashes of the operators' tokens) is a Secret-backed volume too
    [operators_volume] = [name for name, path in mounts.items()
                          if path == str(Path(flags["--operators"]).parent)]
    assert volumes[operators_volume]["secret"]["secretName"] == "triage-agent-operators"
    # the API key comes from a Secret, and no value of any env var is a literal key
    env = {e["name"]: e for e in container["env"]}
    assert env["ANTHROPIC_API_KEY"]["valueFrom"]["secretKeyRef"]["name"] == "triage-agent-anthropic"
    assert "value" not in env["ANTHROPIC_API_KEY"]
    assert "sk-ant" not in (OUTPUTS / "serve-deployment.yaml").read_text()
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert service["spec"]["selector"] == deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["ports"][0]["port"] == 9095


def test_the_deployment_args_are_options_serve_accepts(tmp_path, monkeypatch):
    [container] = documents("serve-deployment.yaml")[0]["spec"]["template"]["spec"]["containers"]
    args = list(container["args"][1:])
    token = tmp_path / "token"
    token.write_text("a" * 64)
    args[args.index("--token-file") + 1] = str(token)
    operators = tmp_path / "operators"
    operators.write_text("alice " + "b" * 64 + "\n")
    args[args.index("--operators") + 1] = str(operators)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    options, run_args = serve.parse(args)
    assert options.token == "a" * 64 and options.operator_list.names == ["alice"]
    assert run_args == ["--max-cost-usd", "2", "--allow-action", "rollout_restart",
                        "--allow-action", "rollout_undo"]


def test_the_alertmanager_receiver_points_at_the_service_with_the_token():
    [config] = documents("alertmanager-receiver.yaml")
    deployment, service = documents("serve-deployment.yaml")
    [route] = config["route"]["routes"]
    [receiver] = config["receivers"]
    assert route["receiver"] == receiver["name"] and route["continue"] is True
    [hook] = receiver["webhook_configs"]
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    port = service["spec"]["ports"][0]["port"]
    assert hook["url"] == f"http://{name}.{namespace}.svc:{port}/alertmanager"
    assert hook["http_config"]["authorization"]["type"] == "Bearer"
    assert hook["http_config"]["authorization"]["credentials_file"].endswith("/token")
    assert hook["send_resolved"] is False
