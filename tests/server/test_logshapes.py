"""The no-pattern summary of search_logs: which lines look like trouble, their shapes with the
variable parts masked, new and rising marks, the order (a rare new error before a frequent old
warning), the bound on shapes shown, redacted examples, and a healthy log that has no shapes."""

import pytest

from mcp_kubectl_server.digests.logshapes import (SHAPES_SHOWN, ShapeTable, looks_like_trouble, render_shapes, shape_of,
                                                  stamp_epoch)

END = 1_800_000_000.0
START = END - 3600


def _stamp(moment):
    from datetime import datetime, timezone
    return datetime.fromtimestamp(moment, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f000Z")


@pytest.mark.parametrize("line", [
    "ERROR db write failed", "java.lang.NullPointerException", "panic: runtime error: index out of range",
    "dial tcp 10.0.0.7:5432: connect: connection refused", "context deadline exceeded",
    "open /data: permission denied", '10.1.2.3 - - "GET /api HTTP/1.1" 503 12', "upstream status=502",
    "    at com.shop.Cart.add(Cart.java:42)", '  File "/app/main.py", line 3, in <module>',
    "worker exited with code 137", "WARN slow query", "x509: certificate has expired",
    "lookup db on 10.96.0.10:53: no such host", "redis pool exhausted"])
def test_trouble_lines_are_recognised(line):
    assert looks_like_trouble(line)


@pytest.mark.parametrize("line", [
    "INFO GET /api/v1/items/538 200 2451ms", "DEBUG cache hit key=item:562 ttl=300s",
    "process exited with code 0", "INFO started in 503ms", "INFO listening on :8080"])
def test_healthy_lines_are_not(line):
    assert not looks_like_trouble(line)


def test_variable_parts_are_masked_into_one_shape():
    one = shape_of("2026-12-07T19:30:00.123Z ERROR timeout after 5012ms talking to 10.0.3.4:6379 "
                   "request_id=8084d017-a93f-48b4-a29f-b7d8fb32d5a1 txn=1a2b3c4d5e6f attempt 3")
    two = shape_of("2026-12-07T19:31:07.001Z ERROR timeout after 12ms talking to 10.0.9.1:6379 "
                   "request_id=e6731b8d-ae95-4423-a8a1-d195dd73b336 txn=ffee00112233 attempt 14")
    assert one == two == ("<time> ERROR timeout after <dur> talking to <ip> request_id=<uuid> txn=<hex> "
                          "attempt <n>")


def _table(rows):
    table = ShapeTable(start=START, end=END)
    for line, moment, pod in rows:
        table.add(line, _stamp(moment), pod)
    return table


def test_a_rare_new_error_comes_before_a_frequent_old_warning_and_is_marked():
    rows = [(f"WARN slow request took {i}ms", START + i, "web-1") for i in range(1, 3000)]
    rows += [("ERROR ledger write failed: deadlock detected", END - 60, "web-2")]
    text = render_shapes(_table(rows))
    assert text[1].startswith("- [new] count=1 pods=web-2 ")
    assert text[2] == "  shape: ERROR ledger write failed: deadlock detected"
    assert text[4].startswith("- count=2999 pods=web-1 ")


def test_a_shape_whose_rate_jumps_in_the_last_tenth_is_rising():
    rows = [("ERROR upstream timeout", START + 600 * i, "api-1") for i in range(5)]      # 5 before
    rows += [("ERROR upstream timeout", END - 300 + i, "api-1") for i in range(50)]      # 50 at the end
    rows += [("ERROR steady failure", START + 36 * i, "api-2") for i in range(100)]      # even all along
    text = "\n".join(render_shapes(_table(rows)))
    assert "- [rising] count=55 pods=api-1" in text
    assert "- count=100 pods=api-2" in text and "[new] count=100" not in text


def test_at_most_thirty_shapes_then_a_count():
    rows = [(f"ERROR failure kind-{chr(97 + i % 26)}{chr(97 + i // 26)}", START + i, "p") for i in range(40)]
    text = render_shapes(_table(rows))
    assert sum(line.startswith("- ") for line in text) == SHAPES_SHOWN
    assert text[-1].startswith("... 10 more shapes (10 lines) not shown")


def test_examples_are_redacted_and_a_healthy_log_has_no_shapes():
    text = "\n".join(render_shapes(_table([("ERROR login failed password=hunter2-prod for admin", END - 9, "p")])))
    assert "hunter2" not in text and "example: ERROR login failed password=" in text
    assert render_shapes(_table([("INFO all good", END - 5, "p")]))[0].startswith("no line in the window looks like trouble")


def test_stamps_parse_to_epoch_seconds_and_junk_falls_back():
    from datetime import datetime, timezone
    assert stamp_epoch("2027-01-15T08:00:00Z", 0.0) == datetime(2027, 1, 15, 8, tzinfo=timezone.utc).timestamp()
    assert stamp_epoch("2027-01-15T08:00:00.250000000Z", 0.0) - stamp_epoch("2027-01-15T08:00:00Z", 0.0) == 0.25
    assert stamp_epoch("not-a-time", 7.0) == 7.0
