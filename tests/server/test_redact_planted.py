"""The planted-secret table (fixtures/kube_sim/scenarios/secrets.py, fresh values every run)
against every way out. Nothing planted, and no 16-character piece of it, may come out:

- redact() alone, row by row, keeping each row's marker;
- our server, through real kubectl against the `secrets` cluster, every tool it lists, called
  on every leaky pod and node and the ConfigMap: no planted piece in any output or in the server's
  stderr, and each place (log line, event, args, annotation, exec probe command, termination
  message, node condition, ConfigMap value) shown; env values show as names only;
- our server again, for what is no secret (secrets.kept: Secret names, prose after a credential
  word, a log ending in a bare `password:`): each comes out unchanged;
- get_logs with a tail that cuts a secret's key off: the margin it reads keeps it hidden;
- the loop, through the CLI (in this process: tests/support/cli_here.py) against a
  third-party-shaped server (a process) that returns every row verbatim, and again in every place
  of the objects it prints (a pod's annotations, args, env values, exec probe commands and
  termination messages, events, node conditions, ConfigMap data), and a fake Messages API over
  HTTP: each place reaches the request body, and no planted piece is in any request body the
  loop sends, nor in the trace, audit, stdout or stderr; what is no secret, printed by that
  server too, reaches the request body unchanged."""

import json
import os
import random
import shlex
import sys
from pathlib import Path

import pytest

from fixtures.kube_sim.scenarios import secrets
from fixtures.kube_sim.scenarios.planted import pieces
from mcp_kubectl_server.redact import MASK, redact
from tests.support.fake_messages_api import FakeMessagesApi, response, text, tool_use
from tests.agent.cli.test_cli import run_cli_here
from tests.support.server_support import ServerProcess
from fixtures.kube_sim.sim import start_sim

SEED = random.SystemRandom().getrandbits(64)   # fresh values on every run
PLANTED, TAIL_CASES = secrets.table(SEED)
PODS, NODES = secrets.names(PLANTED)
SECRETS = [part for _, parts in PLANTED for part in parts]
PIECES = frozenset(piece for secret in SECRETS if len(secret) >= 16 for piece in pieces(secret))
SHORT = [secret for secret in SECRETS if len(secret) < 16]
MARKERS = [text.split(":", 1)[0] for text, _ in PLANTED]
KEPT = secrets.kept(SEED)   # what must come out unchanged: Secret names, prose, a log's lines
K8S = Path(__file__).resolve().parents[1] / "support" / "fake_k8s_mcp_server.py"


def strings(value):
    """Every string inside a parsed JSON value."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def leaks(text):
    """The planted secrets, or 16-character pieces of them, that `text` shows."""
    found = {text[i:i + 16] for i in range(len(text) - 15)} & PIECES
    return sorted(found) + [secret for secret in SHORT if secret in text]


def test_the_table_is_large_and_fresh():
    assert len(PLANTED) >= 60 and len(PIECES) > 1000
    assert leaks("".join(SECRETS[::7])), "the leak check must be able to fail"


@pytest.mark.parametrize("row, parts", PLANTED, ids=MARKERS)
def test_each_planted_row_is_redacted_and_keeps_its_marker(row, parts):
    out = redact(row)
    assert [p for p in parts if set(pieces(p)) & set(pieces(out)) or p in out] == [], out
    assert "[REDACTED]" in out and out.startswith(row.split(":", 1)[0]) and redact(out) == out


def arguments_for(tool, target):
    """Arguments for any tool of our server: namespace prod, a pod, node or ConfigMap name."""
    properties = tool["inputSchema"].get("properties", {})
    values = {"namespace": "prod", "name": target, "container": "c00", "tail": 1000}
    arguments = {k: v for k, v in values.items() if k in properties}
    for key in tool["inputSchema"].get("required", []):
        arguments.setdefault(key, target)
    return arguments


def targets(tool):
    if "node" in tool["name"]:
        return NODES
    return ("leaky",) if tool["name"] == "get_config" else PODS


@pytest.fixture(scope="module")
def secrets_server(tmp_path_factory):
    """Our server on a fresh `secrets` cluster (SEED); the read-only tests share it."""
    path = secrets.write_cluster(tmp_path_factory.mktemp("secrets") / "secrets.json", SEED)
    with start_sim(path) as sim:
        server = ServerProcess("--allow-namespaces", "prod", "--kubeconfig", sim.kubeconfig,
                               "--timeout", "30")
        server.initialize()
        yield server
        server.close()


def test_our_server_never_shows_a_planted_value_in_any_tool(secrets_server):
    server = secrets_server
    outputs, done = {}, {}
    for tool in server.request("tools/list")["result"]["tools"]:
        for target in targets(tool) + ("",):
            arguments = arguments_for(tool, target) if target else {"namespace": "prod"}
            key = json.dumps([tool["name"], arguments], sort_keys=True)
            if key not in done:  # a tool without a name argument runs once
                done[key] = server.call(tool["name"], arguments)[0]
            outputs[(tool["name"], target)] = done[key]
    everything = "\n".join(outputs.values()) + "".join(server.stderr_lines)
    assert leaks(everything) == []
    shown = {place: "\n".join(line for target in where
                              for line in outputs[(tool, target)].splitlines() if part in line)
             for place, tool, where, part in (
                 ("log lines", "get_logs", PODS, ""),
                 ("events", "get_events", PODS, ""),
                 ("args", "describe_pod", PODS, " command "),
                 ("annotations", "describe_pod", PODS, "annotation plant.example.com/row-"),
                 ("probe commands", "describe_pod", PODS, " liveness_probe exec "),
                 ("termination messages", "describe_pod", PODS, " last_state=terminated "),
                 ("node conditions", "describe_node", NODES, ""),
                 ("ConfigMap values", "get_config", ("leaky",), ""))}
    for place, output in shown.items():  # each place really showed each row, redacted
        assert [m for m in MARKERS if m not in output] == [], place
    env = [line for pod in PODS for line in outputs[("describe_pod", pod)].splitlines()
           if " env ROW_" in line]   # env values: names only, never the value
    assert len(env) == len(PLANTED) and all(line.endswith("(literal value, not shown)")
                                            for line in env)


def test_what_is_no_secret_comes_out_of_our_server_unchanged(secrets_server):
    """Secret names (volume, envFrom, secretKeyRef, imagePullSecret, Ingress TLS), prose after a
    credential word, and the log's framing line after its last line, a bare `password:`."""
    call = secrets_server.call
    pod = call("describe_pod", {"namespace": "prod", "name": "named"})[0]
    for line in (f"volume tls secret_name={KEPT['volume']}", f"envFrom secret {KEPT['env_from']}",
                 f"env DB_PASSWORD from secret {KEPT['key_ref']} key password",
                 f"image_pull_secret {KEPT['pull']} (from the pod)", KEPT["reset"]):
        assert line in pod, line
    ingresses = call("get_ingresses", {"namespace": "prod"})[0]
    assert f"-> Secret {KEPT['ingress']}: " in ingresses
    node = call("describe_node", {"name": NODES[0]})[0]
    assert "condition PasswordRotation=False reason=JobCreated " in node
    assert f'message="{KEPT["rotation"]}"' in node
    events = call("get_events", {"namespace": "prod", "name": "named"})[0]
    assert KEPT["reset"] in events
    logs = call("get_logs", {"namespace": "prod", "name": "named"})[0]
    assert "\n".join(KEPT["log"]) + "\n" in logs and MASK not in logs, logs
    assert MASK not in pod + ingresses + events


@pytest.mark.parametrize("case", TAIL_CASES, ids=[case[0] for case in TAIL_CASES])
def test_a_tail_that_cuts_the_key_off_still_hides_the_value(secrets_server, case):
    container, tail, lines, secret = case
    assert secret in redact("\n".join(lines[-tail:])), "the case must need the margin"
    text, is_error = secrets_server.call("get_logs", {"namespace": "prod", "name": "leaky-tail",
                                                      "container": container, "tail": tail})
    assert not is_error and f"{tail} line{'s' * (tail != 1)} (tail={tail})" in text, text
    assert secret not in text and "[REDACTED]" in text and lines[-1].split()[0] in text


def scalar(text):
    """A YAML scalar as a Kubernetes server prints one that needs quotes (`: ` inside)."""
    return json.dumps(text)


def foreign_objects(rows):
    """The rows in every place, as a third-party server prints objects (YAML): a pod's
    annotations, args, env values, exec probe commands and termination messages, events, a
    node's conditions, a ConfigMap's data (PLACES: a pattern per place to find a row there)."""
    out = ["apiVersion: v1", "kind: Pod", "metadata:", "  name: leaky", "  annotations:"]
    out += [f"    plant.example.com/row-{i:03d}: {scalar(t)}" for i, t in rows]
    out += ["spec:", "  containers:"]
    for i, t in rows:
        out += [f"  - name: c{i:03d}", "    args:", f"    - {scalar(t)}", "    env:",
                f"    - name: ROW_{i:03d}", f"      value: {scalar(t)}", "    livenessProbe:",
                "      exec:", "        command:", "        - sh", "        - -c",
                f"        - {scalar(t)}"]
    out += ["status:", "  containerStatuses:"]
    for i, t in rows:
        out += [f"  - name: c{i:03d}", "    lastState:", "      terminated:",
                f"        message: {scalar(t)}", "        reason: Error"]
    out += ["---", "kind: EventList", "items:"]
    out += [f"- reason: Planted{i:03d}\n  message: {scalar(t)}" for i, t in rows]
    out += ["---", "kind: Node", "status:", "  conditions:"]
    out += [f"  - type: Planted{i:03d}\n    message: {scalar(t)}" for i, t in rows]
    out += ["---", "kind: ConfigMap", "data:"]
    out += [f"  row-{i:03d}: {scalar(t)}" for i, t in rows]
    return "\n".join(out)


def foreign_kept(kept):
    """What is no secret, as a third-party server prints it: Secret names in a pod's and an
    Ingress's YAML, prose in an event and a node condition, a log ending in a bare key."""
    return "\n".join([
        "---", "kind: Pod", "metadata:", "  name: named", "spec:", "  imagePullSecrets:",
        f"  - name: {kept['pull']}", "  containers:", "  - name: app", "    envFrom:",
        "    - secretRef:", f"        name: {kept['env_from']}", "    env:",
        "    - name: DB_PASSWORD", "      valueFrom:", "        secretKeyRef:",
        "          key: password", f"          name: {kept['key_ref']}", "  volumes:",
        "  - name: tls", "    secret:", "      defaultMode: 420",
        f"      secretName: {kept['volume']}", "---", "kind: Ingress", "spec:", "  tls:",
        "  - hosts:", "    - named.example.com", f"    secretName: {kept['ingress']}", "---",
        "kind: Event", f"message: {scalar(kept['reset'])}", "---", "kind: Node", "status:",
        "  conditions:", f"  - message: {scalar(kept['rotation'])}", "    status: \"False\"",
        "    type: PasswordRotation", "--- pods_log named", *kept["log"], "--- end of log"])


PLACES = {"annotations": '    plant.example.com/row-{i}: "{m}',
          "args": '    args:\n    - "{m}', "env values": '      value: "{m}',
          "probe commands": '        - -c\n        - "{m}',
          "termination messages": '        message: "{m}',
          "events": '- reason: Planted{i}\n  message: "{m}',
          "node conditions": '  - type: Planted{i}\n    message: "{m}',
          "ConfigMap values": '  row-{i}: "{m}'}


def test_the_loop_redacts_a_server_that_does_not(tmp_path):
    plant = tmp_path / "plant.txt"
    plant.write_text("\n".join(row for row, _ in PLANTED) + "\n"
                     + foreign_objects([(i, row) for i, (row, _) in enumerate(PLANTED)]) + "\n"
                     + foreign_kept(KEPT))
    calls = [tool_use("toolu_01", "pods_list", {"namespace": "prod"}),
             tool_use("toolu_02", "events_list", {"namespace": "prod"})]
    script = [response("tool_use", *calls), response("end_turn", text("done")),
              response("end_turn", text("still done"))]
    trace, audit = tmp_path / "trace.jsonl", tmp_path / "audit.jsonl"
    server = shlex.join([sys.executable, str(K8S), "--log", str(tmp_path / "log"), "--plant",
                         str(plant)])
    with FakeMessagesApi(script) as api:
        out = run_cli_here("pods fail", "--namespaces", "prod", "--mcp", server, "--json",
                           "--max-result-bytes", "0",
                           "--trace", str(trace), "--audit-log", str(audit),
                           env={"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.url,
                                # the spans carry what the model saw, so they are checked too
                                "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
    assert out.returncode == 3 and json.loads(out.stdout)["stop"] == "end_turn", out.stderr
    assert "gen_ai.tool.call.result" in trace.read_text()
    bodies = [r["raw"].decode("utf-8") for r in api.requests]
    assert len(bodies) == 3 and all(MARKERS[-1] in body for body in bodies[1:])
    results = [block["content"] if isinstance(block["content"], str)
               else block["content"][0]["text"]
               for message in json.loads(bodies[1])["messages"] if message["role"] == "user"
               for block in message["content"]
               if isinstance(block, dict) and block.get("type") == "tool_result"]
    assert len(results) == 2
    assert foreign_kept(KEPT) in results[1]   # no secret there: it reached the model unchanged
    for place, pattern in PLACES.items():   # every place of every row reached the model, redacted
        missing = [m for i, m in enumerate(MARKERS) if
                   pattern.format(i=f"{i:03d}", m=m) not in results[1]]
        assert missing == [], place
    records = trace.read_text().splitlines() + audit.read_text().splitlines()
    for where, data in [("request", b) for b in bodies] + [("record", r) for r in records]:
        # JSON escapes quotes and newlines: look at every string in it, decoded, too
        assert leaks(data) == [] and leaks("\n".join(strings(json.loads(data)))) == [], where
    assert leaks(out.stdout) == [] and leaks(out.stderr) == []
    assert os.path.getsize(tmp_path / "log") > 0  # the server really ran both calls
