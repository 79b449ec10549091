"""The simulator's pod logs as the API server serves them, read by the real kubectl: since
(seconds and time), timestamps, tail, limit-bytes after the stamps, previous and container, lines
that carry the kubelet's stamp or the application's own, and large logs generated from a compact
description (fixtures/kube_sim/loggen.py)."""

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.error import HTTPError
from urllib.request import urlopen

import pytest

from fixtures.kube_sim.loggen import SERVED_MAX
from fixtures.kube_sim.logs import serve_log, spread_times, timed_lines
from fixtures.kube_sim.store import ApiError, load_cluster
from tests.support.kubectl_tables import kubectl, ok

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")
STAMP = "%Y-%m-%dT%H:%M:%S"


@pytest.fixture(scope="module")
def previous(shared_sim):
    sim = shared_sim("log-previous")
    pod = ok(sim, "get", "pods", "-n", "prod", "-l", "app=billing-sync", "-o", "name").strip()
    return sim, pod


def _stamp(line):
    return datetime.strptime(line.split(" ", 1)[0][:19], STAMP).replace(tzinfo=timezone.utc)


def test_a_generated_log_is_large_served_and_small_in_the_repository(previous):
    sim, pod = previous
    text = ok(sim, "logs", "-n", "prod", pod, "--previous")
    lines = text.splitlines()
    assert len(lines) == 9000 + 1 + 4000 + 1   # the base lines and every needle
    assert lines[-1] == "FATAL giving up after 4000 failed ledger sync attempts"
    assert sum("x509: certificate has expired" in line for line in lines) == 1
    assert Path("fixtures/clusters/log-previous.json").stat().st_size < 200_000
    assert ok(sim, "logs", "-n", "prod", pod, "--previous") == text   # the same every time (seeded)


def test_timestamps_are_the_kubelet_s_nine_digit_stamps_oldest_first(previous):
    sim, pod = previous
    lines = ok(sim, "logs", "-n", "prod", pod, "--previous", "--timestamps", "--tail=200").splitlines()
    assert len(lines) == 200
    assert all(len(line.split(" ", 1)[0]) == 30 and line[29] == "Z" for line in lines)
    times = [_stamp(line) for line in lines]
    assert times == sorted(times)
    # the previous instance ended about 20 minutes ago (its lastState.terminated.finishedAt)
    assert timedelta(minutes=19) < datetime.now(timezone.utc) - times[-1] < timedelta(minutes=22)


def test_since_keeps_the_window_and_tail_counts_within_it(previous):
    sim, pod = previous
    window = ok(sim, "logs", "-n", "prod", pod, "--previous", "--since=30m", "--timestamps").splitlines()
    oldest = datetime.now(timezone.utc) - timedelta(minutes=30, seconds=5)
    assert window and all(_stamp(line) >= oldest for line in window)
    # the x509 line is 35 minutes before the end, which was 20 minutes ago: outside 30m, inside 60m
    assert not any("x509" in line for line in window)
    assert any("x509" in line for line in ok(sim, "logs", "-n", "prod", pod, "--previous", "--since=60m").splitlines())
    assert ok(sim, "logs", "-n", "prod", pod, "--previous", "--since=30m", "--tail=5").splitlines() == \
        [line.split(" ", 1)[1] for line in window[-5:]]
    since_time = (datetime.now(timezone.utc) - timedelta(minutes=30)).strftime(STAMP + "Z")
    by_time = ok(sim, "logs", "-n", "prod", pod, "--previous", f"--since-time={since_time}").splitlines()
    assert abs(len(by_time) - len(window)) < 50
    # the current instance writes about a line a second over its 20 minutes
    assert len(ok(sim, "logs", "-n", "prod", pod, "--since=2s").splitlines()) <= 4


def test_limit_bytes_cuts_after_the_stamps(previous):
    sim, pod = previous
    full = ok(sim, "logs", "-n", "prod", pod, "--previous", "--timestamps", "--tail=3")
    assert ok(sim, "logs", "-n", "prod", pod, "--previous", "--timestamps", "--tail=3", "--limit-bytes=40") == full[:40]


def test_both_since_parameters_are_refused_and_bad_values_are_statuses(previous):
    sim, pod = previous
    base = f"{sim.url}/api/v1/namespaces/prod/pods/{pod.split('/')[1]}/log?"
    for query, code in (("sinceSeconds=60&sinceTime=2026-01-01T00:00:00Z", 422), ("sinceSeconds=0", 422),
                        ("sinceSeconds=x", 400), ("sinceTime=yesterday", 400)):
        with pytest.raises(HTTPError) as err:
            urlopen(base + query, timeout=10)
        assert err.value.code == code, query
        assert json.loads(err.value.read())["kind"] == "Status"


def test_application_stamps_stay_in_the_line_and_give_its_time(kube_sim):
    # a simulator of its own: starting the shared crashloop one early would age the pods that
    # tests/sim/test_reads.py reads to the minute
    sim = kube_sim("crashloop")
    plain = ok(sim, "logs", "-n", "prod", "checkout-6f8d9c7b5d-x7k2p", "--previous", "--tail=2").splitlines()
    stamped = ok(sim, "logs", "-n", "prod", "checkout-6f8d9c7b5d-x7k2p", "--previous", "--tail=2",
                 "--timestamps").splitlines()
    assert plain[0][:4] == stamped[0][31:35] and stamped[0][31:] == plain[0]   # the app's own stamp kept
    assert stamped[0][:19] == plain[0][:19]   # and used as the line's time


def test_lines_without_a_stamp_are_spread_between_their_neighbours():
    assert spread_times([None, None, 10.0, None, 20.0, None], 4.0, 30.0) == [6.0, 8.0, 10.0, 15.0, 20.0, 25.0]
    lines = timed_lines(["2026-11-29T11:00:00.000000000Z kubelet-stamped", "plain"], 0.0, None, now=4102444800.0)
    assert [text for _, text in lines] == ["kubelet-stamped\n", "plain\n"]
    assert lines[0][0] < lines[1][0] <= 4102444800.0
    with pytest.raises(ApiError):
        serve_log(lines, {"sinceSeconds": "1", "sinceTime": "2026-11-29T11:00:00Z"}, now=0.0)


def test_a_stored_kubelet_stamp_comes_back_to_the_nanosecond():
    stored = ["2026-11-29T11:58:29.101000000Z first", "2026-11-29T11:58:29.999999999Z second",
              "2026-11-29T11:58:30.000000007Z third"]
    lines = timed_lines(stored, 0.0, None, now=4102444800.0)
    body = serve_log(lines, {"timestamps": "true"}, now=4102444800.0).decode()
    assert body.splitlines() == stored


def test_a_cluster_file_can_describe_a_log_compactly(tmp_path):
    doc = {"kind": "SimulatedCluster", "name": "gen", "base": "healthy", "logs": {
        "prod/frontend-74b9c5d6f8-d4t6m/frontend": {"current": {"generate": {
            "lines": 1000, "seed": 3, "templates": ["GET /a/{int} {ms}ms", ["id={uuid} ip={ip} {hex}", 2]],
            "needles": [{"line": "NEEDLE at the middle", "at": 0.5}]}}}}}
    path = tmp_path / "gen.json"
    path.write_text(json.dumps(doc))
    log = load_cluster(path)["logs"]["prod/frontend-74b9c5d6f8-d4t6m/frontend"]["current"]
    lines = timed_lines(log, 1000.0, 2000.0, now=3000.0)
    assert len(lines) == 1001 and lines[500][1] == "NEEDLE at the middle\n"
    assert all(1000.0 <= t <= 2000.0 for t, _ in lines)
    assert "{" not in "".join(text for _, text in lines)


def test_a_generated_instance_keeps_its_times_and_stamps_from_one_request_to_the_next():
    log = {"generate": {"lines": 500, "seed": 5, "templates": ["GET /a/{int} {ms}ms"],
                        "needles": [{"line": "ERROR late", "minutes_ago": 1}]}}
    first = timed_lines(log, 1000.0, None, now=5000.0)     # a running instance, first asked at 5000
    later = timed_lines(log, 1000.0, None, now=5600.0)     # ten minutes on: the same lines at the same times
    assert later == first and (4940.0, "ERROR late\n") in first and first[-1][0] < 5000.0
    stamped = serve_log(first, {"timestamps": "true"}, now=5000.0)
    assert serve_log(later, {"timestamps": "true"}, now=5600.0) == stamped
    for (moment, text), line in zip(first, stamped.decode().splitlines(keepends=True)):
        when, _, rest = line.partition(" ")
        parsed = datetime.strptime(when[:19], STAMP).replace(tzinfo=timezone.utc).timestamp()
        assert rest == text and abs(parsed + int(when[20:29]) / 1e9 - moment) < 1e-6 and when[29:] == "Z"
    assert serve_log(later, {"timestamps": "true", "sinceSeconds": "660", "tailLines": "3"}, now=5600.0) \
        == b"".join(stamped.splitlines(keepends=True)[-3:])
    restarted = timed_lines(log, 2000.0, None, now=5600.0)   # another instance: its own times
    assert [t for t, _ in restarted] != [t for t, _ in first] and restarted[-1][0] < 5600.0


def test_at_most_a_bound_of_generated_instances_are_kept():
    log = {"generate": {"lines": 20, "seed": 6, "templates": ["GET /b/{int}"]}}
    first = timed_lines(log, 1000.0, None, now=5000.0)
    for k in range(SERVED_MAX):   # as many other instances: the oldest kept, the first, is dropped
        timed_lines(log, 1001.0 + k, None, now=5000.0)
    again = timed_lines(log, 1000.0, None, now=9000.0)
    assert again is not first and again[-1][0] > 5000.0   # made afresh, spread up to this request
