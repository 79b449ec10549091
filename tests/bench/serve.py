"""`make bench` figures for `triage-agent serve` (not a test: prints medians, asserts nothing).

- intake: alerts accepted per second over one keep-alive connection, each POST paired with the
  same POST to a bare stdlib HTTP server that answers 202 and does nothing (the reference);
- POST -> outcome file for the replayed crashloop triage through a real serve process, paired
  with one triage CLI run of the same replay (the reference: serve adds queueing and the file);
- the serve process's peak memory (VmHWM) while it accepts a burst of 200 distinct alerts.
Each pair is measured back to back, PAIRS times, and the medians and their ratio are printed.
"""

import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from fixtures.kube_sim.sim import start_sim
from triage_agent.serve import endpoints, runs

ROOT = Path(__file__).resolve().parents[2]
REPLAY = ROOT / "fixtures" / "replay" / "crashloop.json"
ALERT = ROOT / "fixtures" / "alerts" / "crashloop.json"
PAIRS = 5
INTAKE = 200


class _Bare(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"queued": []}\n'
        self.send_response(202)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _alert(i):
    return {"labels": {"alertname": "Bench", "namespace": "prod"}, "fingerprint": f"b{i:06d}",
            "status": "firing"}


def _post_many(port, count, offset):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    began = time.perf_counter()
    for i in range(count):
        conn.request("POST", "/alertmanager", json.dumps(_alert(offset + i)),
                     {"Content-Type": "application/json"})
        conn.getresponse().read()
    conn.close()
    return count / (time.perf_counter() - began)


def intake(tmp):
    parked = threading.Event()
    engine = runs.Engine(runner=lambda job, register: (parked.wait(), (0, {}, None))[1],
                               outbox=Path(tmp) / "intake", workers=1,
                               queue_size=INTAKE * PAIRS + 1, dedup_seconds=0).start()
    ours = endpoints.make_server(endpoints.Service(engine, ceiling=("prod",)), "127.0.0.1", 0)
    bare = ThreadingHTTPServer(("127.0.0.1", 0), _Bare)
    for server in (ours, bare):
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
    rates, refs = [], []
    for n in range(PAIRS):
        rates.append(_post_many(ours.server_address[1], INTAKE, n * INTAKE))
        refs.append(_post_many(bare.server_address[1], INTAKE, n * INTAKE))
    parked.set()
    engine.drain(0)
    for server in (ours, bare):
        server.shutdown()
        server.server_close()
    ours_m, ref_m = statistics.median(rates), statistics.median(refs)
    print(f"intake: {ours_m:.0f} alerts/s accepted, against {ref_m:.0f} requests/s for a bare "
          f"stdlib server (ratio {ours_m / ref_m:.2f}; median of {PAIRS} pairs of {INTAKE})")


class _Serve:
    def __init__(self, env, *args):
        self.proc = subprocess.Popen([sys.executable, "-m", "triage_agent", "serve", "--listen",
                                      "127.0.0.1:0", *args], cwd=ROOT, env=env,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        if "listening on http://127.0.0.1:" not in line:
            raise RuntimeError(f"serve did not start: {line.strip()} {self.proc.stderr.read()}")
        self.port = int(line.split("listening on http://127.0.0.1:")[1].split()[0])
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()

    def post(self, doc):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("POST", "/alertmanager", json.dumps(doc), {"Content-Type": "application/json"})
        answer = json.loads(conn.getresponse().read())
        conn.close()
        return answer

    def peak_kib(self):
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)


def post_to_outcome(tmp, sim, env):
    outbox = Path(tmp) / "outbox"
    service = _Serve(env, "--namespaces", "prod", "--outbox", str(outbox), "--dedup-seconds",
                     "0", "--replay", str(REPLAY), "--kubeconfig", sim.kubeconfig)
    cli = [sys.executable, "-m", "triage_agent", "--alert", str(ALERT), "--namespaces", "prod",
           "--json", "--replay", str(REPLAY), "--kubeconfig", sim.kubeconfig]
    times, refs = [], []
    doc = json.loads(ALERT.read_text())
    try:
        for n in range(PAIRS):
            doc["alerts"][0]["fingerprint"] = f"pair{n}"
            began = time.perf_counter()
            run_id = service.post(doc)["queued"][0]["run_id"]
            while not (outbox / f"{run_id}.json").exists():
                time.sleep(0.005)
            times.append(time.perf_counter() - began)
            began = time.perf_counter()
            subprocess.run(cli, cwd=ROOT, env=env, capture_output=True, check=True)
            refs.append(time.perf_counter() - began)
    finally:
        service.stop()
    ours, ref = statistics.median(times), statistics.median(refs)
    print(f"POST -> outcome file (crashloop replay): {ours * 1000:.0f} ms, against "
          f"{ref * 1000:.0f} ms for the same triage as one CLI run (ratio {ours / ref:.2f}; "
          f"median of {PAIRS} pairs)")


def burst_memory(tmp, sim, env):
    service = _Serve(env, "--namespaces", "prod", "--outbox", str(Path(tmp) / "burst"),
                     "--queue", "1000", "--workers", "1", "--drain-seconds", "0", "--replay",
                     str(REPLAY), "--kubeconfig", sim.kubeconfig)
    before = service.peak_kib()
    try:
        for start in range(0, 200, 20):
            service.post({"alerts": [_alert(i) for i in range(start, start + 20)]})
        peak = service.peak_kib()
    finally:
        service.stop()
    print(f"serve peak memory (VmHWM) over a burst of 200 alerts: {peak / 1024:.1f} MB "
          f"({before / 1024:.1f} MB before it)")


def main():
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        env = dict(os.environ, KUBECACHEDIR=str(Path(tmp) / "kube-cache"))
        env.pop("ANTHROPIC_API_KEY", None)
        intake(tmp)
        with start_sim("crashloop", kubeconfig=Path(tmp) / "kubeconfig") as sim:
            post_to_outcome(tmp, sim, env)
            burst_memory(tmp, sim, env)


if __name__ == "__main__":
    main()
