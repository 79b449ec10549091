"""The metrics digests on healthy and unhealthy series: each ABNORMAL rule fires, absent is never zero."""

from mcp_kubectl_server.digests.metrics import metrics_digest, restarts_in
from mcp_kubectl_server.digests.series import (cap_text, columns, list_digest, points, query_digest,
                                               since_last_drop, slope_per_minute, trend)

END = 1_796_000_400.0
MI = 2 ** 20
POD = {"namespace": "prod", "pod": "web-1", "container": "web"}


def matrix(metric, value, n=61, step=60):
    return {"metric": metric, "values": [[END - (n - 1 - i) * step, str(value(i))] for i in range(n)]}


def info(name, value, **labels):
    return {"metric": dict(POD, __name__=name, **labels), "value": [END, str(value)]}


def results(*, cpu=0.1, throttle=0.02, memory=lambda i: 100 * MI, restarts=lambda i: 0, limits=True,
            reason=None):
    found = {"info": [info("kube_pod_container_resource_requests", 0.25, resource="cpu"),
                      info("kube_pod_container_resource_requests", 128 * MI, resource="memory"),
                      info("kube_pod_container_status_restarts_total", restarts(60))],
             "gauges": [matrix(dict(POD, __name__="container_memory_working_set_bytes"), memory),
                        matrix(dict(POD, __name__="kube_pod_container_status_restarts_total"), restarts)],
             "cpu": [matrix(POD, lambda i: cpu)], "throttle": [matrix(POD, lambda i: throttle)],
             "network": [matrix({"namespace": "prod", "pod": "web-1", "direction": d}, lambda i: 0)
                         for d in ("rx", "tx")]}
    if limits:
        found["info"] += [info("kube_pod_container_resource_limits", 0.5, resource="cpu"),
                          info("kube_pod_container_resource_limits", 256 * MI, resource="memory")]
    if reason:
        found["info"].append(info("kube_pod_container_status_last_terminated_reason", 1, reason=reason))
    return found


def digest(found, pods=("web-1",)):
    return metrics_digest("Deployment prod/web", list(pods), found, window=60, end=END, step=60)


def test_healthy_pod_has_no_abnormal_line_and_every_signal():
    text = digest(results())
    assert "ABNORMAL" not in text
    assert text.splitlines()[1].startswith("nothing abnormal")
    assert "cpu cores min=100m avg=100m max=100m last=100m; request 250m (40% of it), limit 500m" in text
    assert "memory working set min=100Mi avg=100Mi max=100Mi last=100Mi" in text
    assert "limit 256Mi (39%)" in text
    assert "restarts 0 in the window (0 in total); last terminated: none recorded" in text
    assert "rx errors min=0/s" in text


def test_throttling_over_a_quarter_is_abnormal():
    text = digest(results(cpu=0.49, throttle=0.62))
    assert ("ABNORMAL web-1/web: CPU throttled in 62% of CFS periods (avg 62%; over 25%): its 500m CPU"
            " limit holds it back") in text
    assert "ABNORMAL" not in digest(results(cpu=0.3, throttle=0.2))


def test_memory_near_the_limit_is_abnormal():
    text = digest(results(memory=lambda i: 240 * MI))
    assert "ABNORMAL web-1/web: memory working set 240Mi is 94% of its 256Mi limit" in text


def test_memory_on_course_to_the_limit_says_when():
    # 100Mi climbing 2Mi a minute: 220Mi now, the 256Mi limit 18 minutes away
    text = digest(results(memory=lambda i: (100 + 2 * i) * MI))
    assert "memory climbs +2.0Mi/min" in text
    assert "it reaches its 256Mi limit in about 18 min (around " in text
    assert "when the container is OOMKilled" in text
    # a climb that needs more than an hour is not abnormal
    assert "ABNORMAL" not in digest(results(memory=lambda i: (100 + 0.1 * i) * MI))


def test_the_climb_is_measured_since_the_last_restart():
    # sawtooth: falls back to 100Mi at i=40, then +4Mi a minute: 180Mi now, 19 min to 256Mi
    text = digest(results(memory=lambda i: (100 + 4 * (i - 40) if i >= 40 else 150 + i) * MI))
    assert "memory climbs +4.0Mi/min" in text
    assert "in about 19 min" in text


def test_restarts_in_the_window_are_abnormal_with_the_reason():
    text = digest(results(restarts=lambda i: 3 + (i >= 30) + (i >= 50), reason="OOMKilled"))
    assert "ABNORMAL web-1/web: restarted 2 times in the last 60 min (last terminated: OOMKilled)" in text
    assert "restarts 2 in the window (5 in total)" in text


def test_counter_resets_count_as_restarts_not_negative():
    assert restarts_in([(0, 5), (60, 6), (120, 0), (180, 1)]) == 2


def test_absent_series_are_said_absent_never_zero():
    found = results()
    found["cpu"], found["throttle"], found["gauges"] = [], [], []
    text = digest(found, pods=("web-1", "web-2"))
    assert "cpu: no cAdvisor series for this container (container_cpu_usage_seconds_total)" in text
    assert "memory: no cAdvisor series for this container" in text
    assert "pod web-2: no cAdvisor and no kube-state-metrics series in the window" in text
    assert "min=0" not in text.split("pod web-1 network")[0]


def test_no_limits_are_said_none_not_zero():
    text = digest(results(limits=False, throttle=0.9))
    assert "limit none" in text
    assert "ABNORMAL web-1/web: CPU throttled in 90% of CFS periods (avg 90%; over 25%)" in text
    assert "holds it back" not in text


def test_statistics_helpers():
    line = [(t * 60.0, 10 + 2 * t) for t in range(10)]
    assert abs(slope_per_minute(line) - 2) < 1e-9
    assert trend(line) == "rising +2/min"
    assert trend([(t * 60.0, 5.0) for t in range(10)]) == "flat"
    assert since_last_drop([(0, 10), (1, 20), (2, 5), (3, 6)]) == [(2, 5), (3, 6)]


def test_query_digest_summarises_ranges_with_threshold_and_change():
    errors = matrix({"namespace": "prod", "code": "500"}, lambda i: 0 if i < 36 else 2.0)
    ok = matrix({"namespace": "prod", "code": "200"}, lambda i: 12)
    text = query_digest({"resultType": "matrix", "result": [errors, ok]}, namespace="prod", query="q",
                        end=END, minutes=60, step=60, threshold=0.5)
    lines = text.splitlines()
    assert lines[0].startswith("query_metrics in prod, range 60 min to ")
    assert lines[2].startswith('{code="200"} min=12 avg=12 max=12 last=12 flat')
    assert '{code="500"} min=0 avg=0.82 max=2 last=2' in text
    assert "biggest change +2 24 min ago (" in text
    assert "first over 0.5 24 min ago (" in text


def test_query_digest_shows_twenty_series_and_counts_the_rest():
    series = [{"metric": {"namespace": "prod", "pod": f"p{i}"}, "value": [END, str(i)]} for i in range(45)]
    text = query_digest({"resultType": "vector", "result": series}, namespace="prod", query="q", end=END)
    assert "45 series (the 20 highest shown)" in text
    assert '{pod="p44"} 44' in text and '{pod="p24"}' not in text
    assert "25 more series not shown: wrap the query in topk(20, ...)" in text


def mixed_answer():
    """A matrix of every shape the summary handles: steady, climbing, stepped, falling, with
    NaN/Inf gaps, with samples that are not [t, "v"], all NaN, two points out of order, and an
    aggregation by namespace alone."""
    def values(value, n=31):
        return [[END - (n - 1 - i) * 60, value(i)] for i in range(n)]
    bad = [[END, "2", "extra"], [END], None, [END, "x"], [END, None]]
    result = [("steady", values(lambda i: "0.25")),
              ("climbing", values(lambda i: repr(0.1 + 0.0123456789 * i))),
              ("stepped", values(lambda i: "1" if i < 20 else "7.5")),
              ("falling", values(lambda i: str(900 - 7 * i))),
              ("gaps", values(lambda i: ["NaN", "+Inf", "-Inf"][i % 3] if i % 4 == 0 else str(i / 3))),
              ("malformed", values(lambda i: str(i)) + bad),
              ("not-a-number", values(lambda i: "NaN")),
              ("short", [[END, "3"], [END - 60, "4"]])]
    return {"resultType": "matrix", "result": [{"metric": {"namespace": "prod", "pod": pod}, "values": v}
                                               for pod, v in result]
            + [{"metric": {"namespace": "prod"}, "values": values(lambda i: str(-i))}]}


def test_query_digest_text_of_every_series_shape():
    # the text as the point-by-point summary wrote it before the columnar one: pinned, so that a
    # faster path cannot change what the model reads
    text = query_digest(mixed_answer(), namespace="prod", query="q", end=END, minutes=30, step=60,
                        threshold=5)
    assert text.splitlines() == [
        "query_metrics in prod, range 30 min to 01:00Z step 60s: 9 series",
        "sent: q",
        '{pod="falling"} min=690 avg=795 max=900 last=690 falling -7/min; first over 5 30 min ago (00:30Z)',
        '{pod="malformed"} min=0 avg=15 max=30 last=30 rising +1/min; first over 5 24 min ago (00:36Z)',
        '{pod="gaps"} min=0.333 avg=5.12 max=10 last=10 rising +0.333/min; first over 5 13 min ago'
        ' (00:47Z)',
        '{pod="stepped"} min=1 avg=3.31 max=7.5 last=7.5 rising +0.288/min; biggest change +6.5 10 min'
        ' ago (00:50Z); first over 5 10 min ago (00:50Z)',
        '{pod="short"} min=3 avg=3.5 max=4 last=4 too few points for a trend; biggest change +1 1 min'
        ' ago (00:59Z); never over 5',
        '{pod="climbing"} min=0.1 avg=0.285 max=0.47 last=0.47 rising +0.0123/min; never over 5',
        '{pod="steady"} min=0.25 avg=0.25 max=0.25 last=0.25 flat; never over 5',
        '{namespace="prod"} min=-30 avg=-15 max=0 last=-30 falling -1/min; never over 5',
        '{pod="not-a-number"} no numeric points']
    vector = {"resultType": "vector", "result": [
        {"metric": {"namespace": "prod", "pod": f"p{i}"}, "value": [END, v]}
        for i, v in enumerate(["NaN", "2.5", "+Inf", "0", "1e-07", "x", "-3"])]}
    assert query_digest(vector, namespace="prod", query="q", end=END, max_series=5).splitlines()[2:] == [
        '{pod="p1"} 2.5', '{pod="p4"} 1e-07', '{pod="p3"} 0', '{pod="p6"} -3',
        '{pod="p0"} no numeric value',
        "2 more series not shown: wrap the query in topk(5, ...) or sum by (namespace, <label>) (...),"
        " or narrow its selector"]


def test_columns_keep_the_finite_pairs_of_any_answer():
    assert columns({"values": [[END, "1"], [END + 60, "NaN"], [END + 120, "-Inf"], [END + 180, "2"]]}) == (
        [END, END + 180], [1.0, 2.0])
    odd = [[END, "2", "extra"], [END], None, [END, "x"]]  # samples that are not [t, "v"]: left out
    assert columns({"values": [[END, "1"], *odd, [END + 60, "3"]]}) == ([END, END + 60], [1.0, 3.0])
    assert columns({"value": [END, "4"]}) == ([END], [4.0])
    assert columns({"values": "not a list"}) == ([], []) and columns({}) == ([], [])
    # finite values whose sum overflows are all kept (the sum is only the fast test for NaN/Inf)
    assert columns({"values": [[END, "1e308"], [END + 60, "1e308"]]}) == ([END, END + 60], [1e308, 1e308])
    assert points({"values": [[END, "1"], [END + 60, "+Inf"], [END + 120, "5"]]}) == [(END, 1.0),
                                                                                  (END + 120, 5.0)]


def test_byte_cap_says_what_was_left_out():
    text = cap_text([f"line {i} " + "x" * 100 for i in range(500)], 4096)
    assert len(text.encode()) <= 4096
    assert text.endswith("more lines left out at the 4096 byte cap: narrow the query")


def test_list_digest_counts_series_per_name_with_labels():
    series = [{"__name__": "http_requests_total", "namespace": "prod", "code": c, "pod": "a"}
              for c in ("200", "500")] + [{"__name__": "up", "namespace": "prod", "job": "x"}]
    text = list_digest(series, namespace="prod", minutes=60)
    assert text.splitlines() == ["metrics with series in prod over the last 60 min: 2 names, 3 series",
                                 "http_requests_total 2 series; labels: code, pod",
                                 "up 1 series; labels: job"]
    assert "no series here" in list_digest([], namespace="prod", minutes=60)
