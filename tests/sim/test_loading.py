"""How the simulator loads and runs: cluster files (times shifted to now, the committed files
matching the scenario code, clear errors for bad ones) and its command line
(`python3 -m fixtures.kube_sim`: the line it prints, serving kubectl, exit 0 on a signal, exit 2
on a bad cluster file).
"""

import copy
import json
import shutil
import signal
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from fixtures.kube_sim import managed
from fixtures.kube_sim.build import CLUSTERS, build
from fixtures.kube_sim.scenarios.core import SCENARIOS
from fixtures.kube_sim.store import (ClusterFileError, Store, _read_doc, _shift, _shift_objects,
                                    load_cluster, resolve_cluster_path)
from fixtures.kube_sim.tables.core import human_duration
from tests.sim.test_reads import POD

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not on PATH")



TRICKY = [{"metadata": {"creationTimestamp": "2026-11-29T12:00:00Z",
                        "annotations": {"2026-11-29T12:00:00Z": "a key stays",
                                        "applied": '{"time":"2026-11-29T12:00:00Z"}',
                                        "quoted": 'at "2026-11-29T12:00:00Z" and after'}},
           "status": {"times": ["2026-11-29T12:00:00.123456Z", "2026-11-29T12:00:00Z ok",
                                "2026-11-29T12:00:00", 7, None, True, 1.5, "\\"],
                      "nested": [[{"lastTransitionTime": "2026-11-28T23:59:59Z"}]]}}]


@pytest.mark.parametrize("cluster", sorted(p.stem for p in (ROOT / "fixtures" / "clusters").glob(
    "*.json")) + ["tricky"])
def test_the_shift_through_json_text_moves_what_the_walk_moves(cluster):
    # load_cluster shifts every object at once through its JSON text; _shift walks one object
    objects = TRICKY if cluster == "tricky" else _read_doc(resolve_cluster_path(cluster), seen=())["objects"]
    delta = timedelta(days=3, hours=5, minutes=7, seconds=11)
    assert _shift_objects(objects, delta) == [_shift(obj, delta) for obj in objects]
    if cluster == "tricky":
        shifted = _shift_objects(objects, delta)[0]
        assert shifted["metadata"]["creationTimestamp"] == "2026-12-02T17:07:11Z"
        assert shifted["metadata"]["annotations"] == TRICKY[0]["metadata"]["annotations"]
        assert shifted["status"]["times"][0] == "2026-12-02T17:07:11Z"
        assert shifted["status"]["times"][1:] == TRICKY[0]["status"]["times"][1:]


def test_times_are_shifted_to_now():
    cluster = load_cluster("crashloop")
    pod = next(o for o in cluster["objects"] if o["metadata"]["name"] == POD)
    stored = json.loads((ROOT / "fixtures" / "clusters" / "crashloop.json").read_text())
    ref = datetime.strptime(stored["referenceTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    created = datetime.strptime(pod["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    age = datetime.now(timezone.utc) - created.replace(tzinfo=timezone.utc)
    assert 3.9 * 3600 < age.total_seconds() < 4.1 * 3600  # 4h old now, whatever the stored date
    def stamp(line):
        return datetime.strptime(line[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    moved = stamp(cluster["logs"][f"prod/{POD}/checkout"]["previous"][-2])
    original = stamp(stored["logs"][f"prod/{POD}/checkout"]["previous"][-2])
    shift = (moved - original) - (datetime.now(timezone.utc) - ref)
    assert abs(shift.total_seconds()) < 60  # log lines move with the objects
    assert human_duration(4 * 3600 + 30) == "4h" and human_duration(125) == "2m5s"
    assert human_duration(10 * 86400) == "10d" and human_duration(3 * 86400 + 7200) == "3d2h"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_committed_cluster_files_match_the_scenario_code(name):
    assert json.loads((CLUSTERS / f"{name}.json").read_text()) == build(name), \
        "regenerate with: python3 -m fixtures.kube_sim.build"


@pytest.mark.parametrize("content, message", [
    ("not json", "cannot read cluster file"),
    ('{"kind": "PodList", "items": []}', "not a SimulatedCluster"),
    ('{"kind": "SimulatedCluster", "referenceTime": "yesterday", "objects": []}', "referenceTime"),
    ('{"kind": "SimulatedCluster", "referenceTime": "2026-11-29T12:00:00Z", "objects": [{"kind": "Secret"}]}',
     "supported kind"),
    ('{"kind": "SimulatedCluster", "referenceTime": "2026-11-29T12:00:00Z", "generate": {"replicas": 0}}',
     "bad generate block"),
    ('{"kind": "SimulatedCluster", "referenceTime": "2026-11-29T12:00:00Z", "forbidden": ["events"]}',
     "forbidden must be a list"),
])
def test_bad_cluster_files_are_clear_errors(tmp_path, content, message):
    path = tmp_path / "c.json"
    path.write_text(content)
    with pytest.raises(ClusterFileError, match=message):
        load_cluster(str(path))


def test_a_cluster_file_is_read_again_when_it_or_its_base_changes_and_each_load_is_a_copy(tmp_path):
    def cluster(*names, **more):
        return json.dumps({"kind": "SimulatedCluster", "referenceTime": "2026-11-29T12:00:00Z",
                           "objects": [{"kind": "Namespace", "metadata": {"name": n}} for n in names],
                           **more})
    base, top = tmp_path / "base.json", tmp_path / "top.json"
    base.write_text(cluster("aaaa"))
    top.write_text(cluster("top", base=str(base), forbidden=[]))

    def names():
        return [o["metadata"]["name"] for o in load_cluster(str(top))["objects"]]
    first = load_cluster(str(top))
    first["objects"][0]["metadata"]["name"] = "changed by its caller"
    first["forbidden"].append({"resource": "pods"})
    again = load_cluster(str(top))
    assert names() == ["aaaa", "top"] and again["forbidden"] == []
    base.write_text(cluster("bbbb"))   # the same size, at once: the text is what is compared
    assert names() == ["bbbb", "top"]
    top.write_text(cluster("next", base=str(base)))
    assert names() == ["bbbb", "next"]
    base.unlink()
    with pytest.raises(ClusterFileError, match="cluster file not found"):
        load_cluster(str(top))


@pytest.mark.parametrize("cluster", ["crashloop", "rbac-list", "limit-cut"])
def test_an_object_read_for_the_first_time_has_the_managed_fields_it_would_have_had_at_start(cluster):
    loaded = load_cluster(cluster, now=datetime(2026, 12, 1, tzinfo=timezone.utc))
    eager = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]):
             managed.ensure(copy.deepcopy(o))["metadata"].get("managedFields") for o in loaded["objects"]}
    store = Store(copy.deepcopy(loaded))
    pod = next(o for o in loaded["objects"] if o["kind"] == "Pod")["metadata"]
    by_get = store.get("pods", pod["namespace"], pod["name"])["metadata"]["managedFields"]
    served = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]):
              o["metadata"].get("managedFields") for _, o in store.stored()}
    assert by_get == eager[("Pod", pod["namespace"], pod["name"])] and by_get
    assert {k: v for k, v in served.items() if k in eager} == eager
    assert any(fields for fields in eager.values()) and all(
        served[k] is not None for k in served if k[0] != "Event")
    listed, _ = store.list("pods", pod["namespace"])
    assert all(o["metadata"]["managedFields"] == eager[("Pod", o["metadata"]["namespace"],
                                                         o["metadata"]["name"])] for o in listed)


def _read_line(proc, deadline):
    box = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(deadline)
    return box[0] if box else ""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_cli_prints_its_line_serves_kubectl_and_exits_0_on_signal(tmp_path, sig):
    kubeconfig, journal = tmp_path / "kc", tmp_path / "j.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "fixtures.kube_sim", "crashloop", "--port", "0",
                             "--kubeconfig", str(kubeconfig), "--journal", str(journal)],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = _read_line(proc, 20)
        assert "http://127.0.0.1:" in line and str(kubeconfig) in line, line
        out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "get", "pods", "-n", "prod"],
                             capture_output=True, text=True, timeout=60)
        assert "CrashLoopBackOff" in out.stdout
        assert json.loads(kubeconfig.read_text())["current-context"] == "kube-sim"
        proc.send_signal(sig)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)


def test_cli_bad_cluster_is_exit_2_with_a_message(tmp_path):
    out = subprocess.run([sys.executable, "-m", "fixtures.kube_sim", str(tmp_path / "none.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "cluster file not found" in out.stderr and "Traceback" not in out.stderr
