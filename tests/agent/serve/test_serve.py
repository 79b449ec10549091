"""`triage-agent serve` over real HTTP. The engine and HTTP server run in-process with a scripted
runner (a stand-in for the triage CLI child, which counts how many run at once) for the burst,
queue, token, payload and forward cases; the whole service runs as a subprocess with the real
CLI runner, --replay and kube_sim for the end-to-end and SIGTERM cases."""

import json
import shlex
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fixtures.http_thread import ServerThread
from tests.support.fake_messages_api import SMALL_USAGE, response, tool_use
from tests.agent.cli.test_cli import REPLAY, ROOT, run_cli_here
from triage_agent.serve import endpoints, runs
from triage_agent.serve import service as serve

PAYLOAD = json.loads((ROOT / "fixtures" / "alerts" / "crashloop.json").read_text())


def alert(fingerprint, namespace="prod", name="KubePodCrashLooping"):
    return {"status": "firing", "labels": {"alertname": name, "namespace": namespace},
            "annotations": {"summary": f"alert {fingerprint}"}, "fingerprint": fingerprint,
            "startsAt": "2026-11-29T11:50:00Z", "generatorURL": "http://prom/graph"}


def webhook(*alerts_):
    return {"version": "4", "status": "firing", "groupKey": "{}:{}", "commonLabels": {},
            "commonAnnotations": {}, "alerts": list(alerts_)}


class ScriptedRunner:
    """Finishes each run with a small outcome once `gate` is open; counts concurrency."""

    def __init__(self, *, blocked=False):
        self.gate = threading.Event()
        if not blocked:
            self.gate.set()
        self.lock = threading.Lock()
        self.running = self.peak = 0
        self.started = []

    def __call__(self, job, register):
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.started.append(job.run_id)
        self.gate.wait(30)
        with self.lock:
            self.running -= 1
        return 0, {"stop": "report", "tool_calls": 2, "cost_usd": 0.0125}, None


@pytest.fixture
def service(tmp_path):
    """start(runner, **engine_options) -> (base url, engine); all stopped at teardown."""
    started = []

    def start(runner, *, token=None, ceiling=("prod",), **options):
        engine = runs.Engine(runner=runner, outbox=tmp_path / "outbox", **options).start()
        server = endpoints.make_server(endpoints.Service(engine, ceiling=ceiling, token=token),
                                        "127.0.0.1", 0)
        started.append((engine, ServerThread(server).start(), runner))
        return f"http://127.0.0.1:{server.server_address[1]}", engine

    yield start
    for engine, serving, runner in started:
        runner.gate.set()
        engine.drain(5)
        serving.stop()


def post(url, doc=None, *, raw=None, headers=None):
    data = raw if raw is not None else json.dumps(doc).encode()
    request = urllib.request.Request(url + "/alertmanager", data=data, method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


def get(url, path):
    try:
        with urllib.request.urlopen(url + path, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def outcome_files(engine):
    return {p.name[:-len(".json")]: json.loads(p.read_text())
            for p in engine.outbox.glob("r-*.json") if p.name.count(".") == 1}


def test_a_burst_of_200_alerts_with_duplicates(service):
    runner = ScriptedRunner()
    url, engine = service(runner, workers=4, queue_size=200)
    fingerprints = [f"fp{i:03d}" for i in range(150)] + [f"fp{i:03d}" for i in range(0, 150, 3)]
    batches = [fingerprints[i:i + 5] for i in range(0, len(fingerprints), 5)]
    answers, lock = [], threading.Lock()

    def send(batch):
        status, _, body = post(url, webhook(*[alert(fp) for fp in batch]))
        with lock:
            answers.append((status, body))

    threads = [threading.Thread(target=send, args=(b,)) for b in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert engine.wait_idle(30)
    assert {status for status, _ in answers} == {202}
    queued = [q["run_id"] for _, body in answers for q in body["queued"]]
    duplicates = [d for _, body in answers for d in body["deduplicated"]]
    assert len(queued) == 150 and len(set(queued)) == 150 and len(duplicates) == 50
    files = outcome_files(engine)
    assert set(files) == set(queued)                      # exactly one outcome per accepted alert
    assert all(f["status"] == "done" and f["outcome"]["stop"] == "report" for f in files.values())
    assert runner.peak <= 4 and len(runner.started) == 150
    status, metrics = get(url, "/metrics")
    assert "triage_alerts_received_total 200" in metrics
    assert "triage_alerts_deduplicated_total 50" in metrics
    assert 'triage_runs_total{stop="report"} 150' in metrics
    assert "triage_tool_calls_total 300" in metrics and "triage_cost_usd_total 1.875" in metrics
    assert "triage_run_duration_seconds_count 150" in metrics


@pytest.mark.parametrize("raw, reason", [
    (b"{not json", "is not JSON"),
    (json.dumps({"receiver": "x"}).encode(), "not an Alertmanager payload"),
    (json.dumps({"alerts": [{"labels": {"severity": "x"}}]}).encode(), "has no alertname"),
], ids=["not-json", "wrong-shape", "no-alertname"])
def test_payloads_that_are_not_alerts_are_400_with_the_reason(service, raw, reason):
    url, engine = service(ScriptedRunner())
    status, _, body = post(url, raw=raw)
    assert status == 400 and reason in body["error"]
    assert 'triage_alerts_refused_total{reason="bad_payload"} 1' in get(url, "/metrics")[1]
    assert outcome_files(engine) == {}


def test_an_oversized_payload_is_refused_by_its_length_without_reading_it(service):
    import socket
    url, engine = service(ScriptedRunner())
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /alertmanager HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     b"\r\nContent-Length: %d\r\n\r\n{" % (endpoints.MAX_BODY_BYTES + 1))
        answer = sock.makefile("rb").read().decode()
    assert answer.startswith("HTTP/1.1 400") and "larger than" in answer
    assert "Connection: close" in answer


def test_a_token_is_required_when_configured(service):
    url, engine = service(ScriptedRunner(), token="s3cret-token")
    assert post(url, webhook(alert("a")))[0] == 401
    assert post(url, webhook(alert("a")), headers={"Authorization": "Bearer wrong"})[0] == 401
    status, _, body = post(url, webhook(alert("a")),
                           headers={"Authorization": "Bearer s3cret-token"})
    assert status == 202 and len(body["queued"]) == 1
    run_id = body["queued"][0]["run_id"]
    assert get(url, f"/runs/{run_id}")[0] == 401      # outcomes need the token too
    assert get(url, "/healthz") == (200, "ok\n")       # health and metrics do not


def wait_until_running(engine, run_id):
    while engine.status(run_id) != "running":  # the worker picks it up: an event, not a delay
        threading.Event().wait(0.005)


def test_a_full_queue_answers_503_with_retry_after(service):
    runner = ScriptedRunner(blocked=True)
    url, engine = service(runner, workers=1, queue_size=2)
    first = post(url, webhook(alert("q0")))[2]["queued"][0]["run_id"]
    wait_until_running(engine, first)
    assert [post(url, webhook(alert(f"q{i}")))[0] for i in (1, 2)] == [202, 202]
    status, headers, body = post(url, webhook(alert("q9"), alert("q10")))
    assert status == 503 and headers["Retry-After"] == str(endpoints.RETRY_AFTER_SECONDS)
    assert {r["reason"] for r in body["refused"]} == {"queue_full"}
    assert "triage_queue_depth 2" in get(url, "/metrics")[1]
    runner.gate.set()
    assert engine.wait_idle(30)
    assert len(outcome_files(engine)) == 3


def test_out_of_scope_alerts_are_refused_and_the_rest_queued(service):
    url, engine = service(ScriptedRunner(), ceiling=("prod",))
    status, _, body = post(url, webhook(alert("in"), alert("out", namespace="kube-system")))
    assert status == 202 and [q["fingerprint"] for q in body["queued"]] == ["in"]
    assert "none of which is in --namespaces" in body["refused"][0]["reason"]


def test_run_status_and_ids_that_are_not_runs(service):
    runner = ScriptedRunner(blocked=True)
    url, engine = service(runner, workers=1)
    first = post(url, webhook(alert("s1")))[2]["queued"][0]["run_id"]
    second = post(url, webhook(alert("s2")))[2]["queued"][0]["run_id"]
    wait_until_running(engine, first)
    assert json.loads(get(url, f"/runs/{second}")[1]) == {"run_id": second, "status": "queued"}
    runner.gate.set()
    assert engine.wait_idle(30)
    status, text = get(url, f"/runs/{first}")
    assert status == 200 and json.loads(text)["outcome"]["stop"] == "report"
    for bad in ("/runs/../../etc/passwd", "/runs/r-1", "/runs/" + first + ".audit"):
        assert get(url, bad)[0] == 404


class Target:
    """A ticketing webhook on 127.0.0.1:0 that answers `status` and keeps what it received."""

    def __init__(self, status):
        self.received = []
        target = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                target.received.append(json.loads(self.rfile.read(
                    int(self.headers["Content-Length"]))))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{server.server_address[1]}/tickets"
        self.serving = ServerThread(server).start()

    def close(self):
        self.serving.stop()


@pytest.mark.parametrize("status", [200, 500])
def test_forward_posts_each_outcome_once_and_records_a_target_that_keeps_failing(service,
                                                                                  status):
    target = Target(status)
    try:
        url, engine = service(ScriptedRunner(), workers=2)
        forwarder = serve.Forwarder(target.url, engine, attempts=3, delay=0.01, timeout=5)
        engine.on_outcome = forwarder.submit
        queued = post(url, webhook(alert("f1"), alert("f2")))[2]["queued"]
        assert engine.wait_idle(30)
        forwarder.close()
    finally:
        target.close()
    run_ids = sorted(q["run_id"] for q in queued)
    assert sorted(outcome_files(engine)) == run_ids        # runs were never held up
    failures = engine.outbox / "forward-failures.jsonl"
    if status == 200:
        assert sorted(doc["run_id"] for doc in target.received) == run_ids
        assert not failures.exists()
    else:
        assert len(target.received) == 6                   # 3 tries for each of 2 outcomes
        lines = [json.loads(line) for line in failures.read_text().splitlines()]
        assert sorted(line["run_id"] for line in lines) == run_ids
        assert all(line["attempts"] == 3 and "500" in line["error"] for line in lines)
        assert "triage_forward_failures_total 2" in endpoints.metrics_text(engine)


@pytest.mark.parametrize("argv, message", [
    (["--namespaces", "prod", "--execute"], "--execute needs --operators FILE"),
    (["--namespaces", "prod", "--pending-approvals", "x"], "not a run option for serve"),
    (["--namespaces", "prod", "--operators", "/nonexistent/operators"],
     "--operators: cannot read"),
    (["--namespaces", "prod", "--json"], "not a run option for serve: --json"),
    (["--namespaces", "prod", "--listen", "0.0.0.0:9095"], "give --token-file"),
    (["--namespaces", "prod", "--token-file", "/nonexistent/token"], "--token-file"),
    (["--namespaces", "prod", "--listen", "nowhere"], "is not HOST:PORT"),
    (["--namespaces", "Prod!"], "not a valid namespace name"),
    (["--namespaces", "prod", "symptom text"], "not a run option for serve"),
])
def test_serve_options_that_cannot_work_exit_2(argv, message):
    done = run_cli_here("serve", "--replay", str(REPLAY / "crashloop.json"), *argv, timeout=30)
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


class ServeProcess:
    """`python -m triage_agent serve` as a child; waits for its 'listening on' line."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen([sys.executable, "-m", "triage_agent", "serve",
                                      "--listen", "127.0.0.1:0", *args], cwd=ROOT,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.lines = []
        for line in self.proc.stderr:
            self.lines.append(line)
            if "listening on" in line:
                self.url = line.split("listening on ")[1].split()[0]
                break
        threading.Thread(target=lambda: self.lines.extend(self.proc.stderr), daemon=True).start()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


def outbox_files(outbox):
    return {p.name[:-5]: json.loads(p.read_text()) for p in Path(outbox).glob("r-*.json")
            if p.name.count(".") == 1}


def test_end_to_end_with_the_real_cli_runner(kube_sim, tmp_path):
    sim = kube_sim("crashloop")
    outbox = tmp_path / "outbox"
    service = ServeProcess("--namespaces", "prod", "--workers", "1", "--outbox", str(outbox),
                           "--replay", str(REPLAY / "crashloop.json"),
                           "--kubeconfig", sim.kubeconfig)
    try:
        status, _, body = post(service.url, PAYLOAD)
        assert status == 202
        run_id = body["queued"][0]["run_id"]
        while not (outbox / f"{run_id}.json").exists():   # the run completes
            threading.Event().wait(0.02)
        assert post(service.url, PAYLOAD)[2]["deduplicated"][0]["run_id"] == run_id
    finally:
        code = service.stop()
    assert code == 0, "".join(service.lines)
    files = outbox_files(outbox)
    assert set(files) == {run_id}
    done = files[run_id]
    assert done["outcome"]["stop"] == "report" and done["exit_code"] == 0
    assert done["outcome"]["alert"]["alerts"][0]["fingerprint"] == "5c2a7d91e04b3f68"
    verification = done["outcome"]["verification"]   # the outcome file (and what is forwarded)
    assert verification["claims"]["checked"] == 3 and verification["blind_spots"]
    assert verification["reviewed"] is False   # a replay without --verify
    assert (outbox / f"{run_id}.audit.jsonl").read_text().count("\n") >= 4
    assert sim.journal_entries() == []


def test_sigterm_during_a_burst_interrupts_the_running_triage_and_writes_out_the_rest(tmp_path):
    # each run's one tool call hangs (the fake server never answers "hang"), so the first run
    # is certainly still running when SIGTERM comes, whatever the machine's load
    fixture = tmp_path / "hang.json"
    fixture.write_text(json.dumps({"description": "a call that never returns", "responses": [
        response("tool_use", tool_use("toolu_hang", "hang", {"namespace": "prod"}),
                 usage=SMALL_USAGE)]}))
    server = shlex.join([sys.executable, str(ROOT / "tests" / "support" / "fake_mcp_server.py"),
                         "--read-only", "hang"])
    outbox = tmp_path / "outbox"
    service = ServeProcess("--namespaces", "prod", "--workers", "1", "--outbox", str(outbox),
                           "--drain-seconds", "0", "--replay", str(fixture), "--mcp", server,
                           "--mcp-timeout", "60")
    try:
        burst = post(service.url, webhook(*[alert(f"b{i}") for i in range(4)]))[2]["queued"]
        log = outbox / f"{burst[0]['run_id']}.log"
        while "hang namespace=prod" not in (log.read_text() if log.exists() else ""):
            threading.Event().wait(0.02)      # the first run is inside its hanging tool call
    finally:
        code = service.stop()
    assert code == 0, "".join(service.lines)
    files = outbox_files(outbox)
    assert set(files) == {b["run_id"] for b in burst}    # nothing accepted is lost
    interrupted = files[burst[0]["run_id"]]
    assert interrupted["status"] == "done" and interrupted["exit_code"] == 130
    assert interrupted["outcome"]["stop"] == "interrupted"
    assert [files[b["run_id"]]["status"] for b in burst[1:]] == ["not_run"] * 3


def test_make_serve_demo_posts_an_alert_and_gets_a_report():
    done = subprocess.run([sys.executable, "-m", "fixtures.serve_demo"], cwd=ROOT,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "status done, stop report, 3 tool calls" in done.stdout
    assert "triage_runs_total{stop=\"report\"} 1" in done.stdout
    assert "triage-agent serve: stopped" in done.stderr
    assert "pending approval ap-" in done.stdout and "/approvals/ap-" in done.stdout
