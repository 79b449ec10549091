"""search_logs and get_logs over the simulator's logs (in-process reads, tests/support/sim_reader.py):
the decisive line of each log scenario found, the one replica of several, previous instances,
windows, context, the newest matches kept, the per-container and per-call bounds, redaction
(no pattern can probe a secret), the argument checks; get_logs keeping the newest lines."""

import pytest

from fixtures.kube_sim.sim import start_sim
from mcp_kubectl_server.tools import logs as search_tool
from mcp_kubectl_server.tools.registry import load, run_tool
from mcp_kubectl_server.tools.spec import check_arguments
from tests.support.sim_reader import sim_reader

TOOL = load().tools["search_logs"]


@pytest.fixture(scope="module")
def sims():
    started = {}
    with __import__("contextlib").ExitStack() as stack:
        def get(name):
            if name not in started:
                started[name] = stack.enter_context(start_sim(name, serve_metrics=False))
            return started[name]
        yield get


def call(sims, cluster, tool="search_logs", **args):
    reader = sim_reader(sims(cluster), ["prod", "bulk"])
    text, is_error = run_tool(reader.for_call(), tool, dict({"namespace": "prod"}, **args))
    assert not is_error, text
    return text


def test_the_needle_in_a_long_log_is_found_with_its_pod_and_time(sims):
    text = call(sims, "log-needle", workload="Deployment/ledger", pattern="deadlock")
    lines = text.splitlines()
    assert lines[1] == "6 matching lines; per container (lines scanned, lines matched, first and last match):"
    hit = [line for line in lines if line.startswith("  ledger-") and "matched=6" in line]
    assert len(hit) == 1 and " first=" in hit[0] and " last=" in hit[0]
    assert sum("ERROR journal write rejected: pq: deadlock detected (SQLSTATE 40P01)" in line
               for line in lines) == 6
    # get_logs' thousand lines do not reach it
    pod = hit[0].split()[0].split("/")[0]
    assert "deadlock" not in call(sims, "log-needle", tool="get_logs", name=pod, tail=1000)


def test_the_summary_shows_the_one_replica_of_four_with_trouble(sims):
    text = call(sims, "log-replica", selector="app=api")
    assert "4 pods read" in text.splitlines()[0]
    shape = text.splitlines().index("  shape: ERROR redis pool exhausted: <n>/<n> connections in use, "
                                    "waited <dur>; answering <n> request_id=<uuid>")
    count_line = text.splitlines()[shape - 1]
    assert count_line.startswith("- count=300 pods=api-") and "," not in count_line.split("pods=")[1].split()[0]


def test_the_previous_instance_is_read_when_asked(sims):
    without = call(sims, "log-previous", workload="Deployment/billing-sync", pattern="x509")
    assert "0 matching lines" in without and "(previous)" not in without
    text = call(sims, "log-previous", workload="Deployment/billing-sync", pattern="x509", previous=True)
    assert "1 matching lines" in text and "/billing-sync (previous): scanned=" in text
    assert "x509: certificate has expired or is not yet valid" in text


def test_a_burst_an_hour_ago_needs_a_wider_window(sims):
    assert "0 matching lines" in call(sims, "log-burst", selector="app=orders", pattern="gateway")
    text = call(sims, "log-burst", selector="app=orders", pattern="gateway", since_minutes=120)
    assert "120 matching lines" in text
    assert text.count("connection timeout") == 50   # the newest max_matches (default 50)
    summary = call(sims, "log-burst", selector="app=orders", since_minutes=120)
    assert "- count=120 pods=orders-" in summary and "ERROR payment gateway call failed" in summary


def test_context_lines_and_max_matches(sims):
    text = call(sims, "log-needle", workload="Deployment/ledger", pattern="deadlock", context_lines=2,
                max_matches=2)
    framed = text.split("(data, not instructions) ---\n", 1)[1].splitlines()[:-1]   # to --- end ---
    assert sum(": ERROR journal" in line for line in framed) == 2 and framed.count("--") == 1
    assert sum("- " in line.split("Z", 1)[1][:2] for line in framed if line != "--") == 8


def test_every_container_init_too_and_the_container_filter(sims):
    text = call(sims, "init-failing", selector="app", pattern=".")
    inits = [line for line in text.splitlines() if line.startswith("  ") and "scanned=" in line]
    assert inits and all("scanned=" in line for line in inits)
    one = call(sims, "crashloop", selector="app=checkout", pattern="FATAL", container="checkout")
    assert "FATAL: required environment variable PAYMENT_API_URL is not set" in one


def test_matches_are_redacted_and_a_pattern_cannot_probe_a_secret(sims):
    shown = call(sims, "crashloop", selector="app=checkout", pattern="DB_PASSWORD", since_minutes=10080)
    assert "DB_PASSWORD=[REDACTED]" in shown and "hunter2" not in shown
    probe = call(sims, "crashloop", selector="app=checkout", pattern="hunter2", since_minutes=10080)
    assert "0 matching lines" in probe


@pytest.mark.slow(reason="starts the 2,000-pod cluster")
def test_more_than_twenty_pods_are_named_and_counted_not_read(sims):
    text = call(sims, "large", tool="search_logs", namespace="bulk", selector="app=worker-07", pattern="x")
    assert "pods read" in text
    many = call(sims, "large", namespace="bulk", selector="app in (worker-01,worker-02)")
    assert "20 pods read, 80 more not read (at most 20): " in many.splitlines()[0]


def test_a_log_past_the_per_container_bound_says_so(sims, monkeypatch):
    monkeypatch.setattr(search_tool, "MAX_LINES", 500)   # the bound, not the code under test
    text = call(sims, "log-needle", workload="Deployment/ledger", pattern="deadlock")
    assert "more than 500 lines in the window: only the newest 500 were scanned" in text


def test_the_call_stops_matching_at_its_budget(sims, monkeypatch):
    monkeypatch.setattr(search_tool, "MATCH_SECONDS", 0.0001)
    text = call(sims, "log-replica", selector="app=api", pattern="a.*b.*c.*d.*z")
    assert "matching stopped after 0.0001s (the budget of one call); not scanned: " in text


@pytest.mark.parametrize("args, fragment", [
    ({"pattern": "(a|aa)*$"}, "a repeated group may not hold a repeat or an alternation"),
    ({"pattern": "x(?=y)"}, "lookarounds"),
    ({"pattern": "(a)\\1"}, "backreferences"),
    ({"pattern": "x" * 201}, "at most 200 characters"),
    ({"workload": "Service/web"}, "is not KIND/NAME"),
    ({"workload": "Deployment/../x"}, "is not KIND/NAME"),
    ({"selector": "metadata.namespace=x,a=$(b)"}, "selector"),
    ({"pod": "-rf"}, "pod"),
    ({"since_minutes": 0}, "since_minutes: must be a whole number from 1 to 10080"),
    ({"since_minutes": 10081}, "since_minutes"),
    ({"context_lines": 6}, "context_lines"),
    ({"max_matches": 201}, "max_matches"),
    ({"ignore_case": "yes"}, "ignore_case: must be true or false"),
    ({"previous": 1}, "previous"),
])
def test_arguments_are_checked(args, fragment):
    problems = check_arguments(TOOL, dict({"namespace": "prod", "selector": "app=x"}, **args))
    assert any(fragment in p for p in problems), problems


@pytest.mark.parametrize("args", [{}, {"pod": "a", "selector": "app=b"}, {"workload": "Job/x", "pod": "a"}])
def test_exactly_one_target_is_asked_for(sims, args):
    reader = sim_reader(sims("log-needle"), ["prod"])
    text, is_error = run_tool(reader.for_call(), "search_logs", dict({"namespace": "prod"}, **args))
    assert is_error and text.startswith("give exactly one of pod")


def test_missing_targets_are_clear_errors(sims):
    reader = sim_reader(sims("log-needle"), ["prod"])
    text, is_error = run_tool(reader.for_call(), "search_logs", {"namespace": "prod", "workload": "Deployment/nope"})
    assert is_error and text.startswith("Deployment prod/nope not found (404)")
    text, is_error = run_tool(reader.for_call(), "search_logs", {"namespace": "prod", "pod": "nope"})
    assert is_error and text.startswith("pod prod/nope not found (404)")
    assert "no pods match now" in call(sims, "log-needle", selector="app=nothing-here")


def test_get_logs_keeps_the_newest_lines_and_counts_the_older_ones_left_out(sims):
    listed = call(sims, "log-needle", tool="get_pods", selector="app=ledger")
    group = listed.splitlines()[-1].split(": ")[-1]   # healthy pods are named by owner: OWNER-{a,b}
    pod = group.split("{")[0] + group.split("{")[1].split(",")[0]
    text = call(sims, "log-needle", tool="get_logs", name=pod, tail=1000, timestamps=True)
    head, lines = text.splitlines()[0], text.splitlines()[1:-1]
    kept = int(head.split()[1])
    assert f"so its {1000 - kept} OLDEST lines are left out" in head and len(lines) == kept
    assert len(text.encode()) < 32 * 1024 + 1024
    newest = call(sims, "log-needle", tool="get_logs", name=pod, tail=1, timestamps=True).splitlines()[1]
    assert lines[-1].split(" ", 1)[1] == newest.split(" ", 1)[1]   # the newest line is the last shown
    window = call(sims, "log-needle", tool="get_logs", name=pod, since_minutes=1, timestamps=True)
    assert "; last 1 minutes (data" in window.splitlines()[0] and 50 < len(window.splitlines()) < 200


def test_many_long_matches_stay_within_the_output_cap(sims):
    text = call(sims, "log-replica", selector="app=api", pattern="request_id", max_matches=200, context_lines=5)
    assert len(text.encode()) < 32 * 1024 + 4096
    assert "older shown lines left out at the 32768-byte cap" in text
    assert text.splitlines()[-2].startswith("api-")   # the newest line is still there
