"""The no-pattern summary of search_logs: which lines look like trouble, their shapes with the
variable parts masked, new and rising marks, the order (a rare new error before a frequent old
warning), the bound on shapes shown, redacted examples, a healthy log that has no shapes, and
the block search (trouble_rows) finding every line that looks like trouble."""

import random

import pytest

from mcp_kubectl_server.digests.logshapes import (SHAPES_SHOWN, TROUBLE_WORDS, ShapeTable, looks_like_trouble,
                                                  render_shapes, shape_of, stamp_epoch, trouble_rows)
from mcp_kubectl_server.digests.text import clean_log_text

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
    "lookup db on 10.96.0.10:53: no such host", "redis pool exhausted",
    '{"ts":"2026-12-07T23:01:02Z","msg":"charge","status":"503"}'])   # JSON logging quotes the status too
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


# trouble_rows finds, over a whole block, the lines the table then checks one by one with
# looks_like_trouble: it may find more, never fewer. A line is checked as search_logs' scan
# passes it: its text after the kubelet stamp, without terminal escapes when it has them.
STAMP = "2026-12-07T19:49:47.150077105Z"
HEALTHY = ["INFO GET /api/v1/items/42 200 12ms", "DEBUG cache hit key=item:7 ttl=300s",
           "INFO listening on :8080", "INFO done in 1.5s", "INFO 3 replicas ready"]


def _scanned(text):
    return clean_log_text(text) if "\x1b" in text else text


def _missed(lines):
    """The lines looks_like_trouble accepts (as scanned, with or without the part before the
    first space) that trouble_rows does not find, in a block of `lines`; and the lines found."""
    found = set(trouble_rows("\n".join(lines)))
    wanted = {i for i, line in enumerate(lines)
              if looks_like_trouble(_scanned(line)) or looks_like_trouble(_scanned(line.partition(" ")[2]))}
    return [lines[i] for i in sorted(wanted - found)], found


def _forms(word, rng):
    mixed = "".join(c.upper() if rng.random() < 0.5 else c for c in word)
    return [word, word.upper(), word.title(), mixed]


def _trouble_samples():
    rng, out = random.Random(47), []
    for word in TROUBLE_WORDS:
        for form in _forms(word, rng):
            out += [form, f"{form} at the start", f'level=info msg="a {form} here" n=3', f"ends with {form}",
                    f"x{form}y"]
    for form in _forms("exit", rng):
        out += [f"worker {form}ed with code 3", f"{form} status 2", f"child {form}ed with status 137"]
    out += ["status=503", "upstream Status: 502", "HTTP 500", "code_504 retry=5", "status503 x=5",
            "http\t599 :5", 'response "status": 503', '{"status":"502"}', '10.1.2.3 - - "GET /api HTTP/1.1" 503 12',
            "POST /orders 502 after 3s", 'DELETE /a/b HTTP/2" 500', "STATUS 500",
            "    at com.shop.Cart.add(Cart.java:42)", "\tat io.netty.Loop.run(Loop.java:9)", " at Foo.<init>(x)",
            '  File "/app/main.py", line 3, in <module>', '\t\tFile "/app/x.py"', " \x0bat a.b$c(x)",
            "\x1b[31mERR\x1b[0mOR db down", "FA\x1b[1mTAL\x1b[0m", " \x1b[2mat a.b(x)",
            "\u212aILLED by the kernel", "DÉNIED: échec fatal", "İİ ERROR"]
    return out


@pytest.mark.parametrize("stamped", [True, False])
def test_the_block_search_finds_every_line_that_looks_like_trouble(stamped):
    samples = _trouble_samples()
    assert all(looks_like_trouble(_scanned(line)) for line in samples)   # each sample is trouble
    lines = samples + HEALTHY * 3
    random.Random(7).shuffle(lines)
    lines = [f"{STAMP} {line}" if stamped else line for line in lines]
    missed, found = _missed(lines)
    assert missed == []
    assert not {i for i, line in enumerate(lines) if line.endswith(tuple(HEALTHY))} & found   # healthy lines stay out


def test_the_block_search_finds_every_trouble_line_of_random_text():
    rng = random.Random(4747)
    pool = ([w for word in TROUBLE_WORDS for w in _forms(word, rng)]
            + ["exit", "EXITED", " with", " code ", " status ", "status", "Code", "HTTP", "GET ", "/p", " HTTP/1.1",
               "\"", "_", "=", ":", " ", "\t", "\x0b", "\x1c", "5", "50", "503", "599", "1", "0", "7a", "at ",
               'File "', "x.y$z(", "<init>(", "\x1b[31m", "\x1b[0m", "ERR", "or", "ok", "İ", "\u212a", "ill", "é",
               "item", "ms", "s", "e", "p"])
    lines = []
    for _ in range(4000):
        body = "".join(rng.choice(pool) for _ in range(rng.randrange(1, 9)))
        lines.append(f"{STAMP} {body}" if rng.random() < 0.7 else body)
    missed, found = _missed(lines)
    assert missed == []
    assert 200 < sum(looks_like_trouble(_scanned(line.partition(" ")[2])) for line in lines) < len(found) < len(lines)


def test_lines_are_counted_right_when_the_lower_case_is_longer():
    lines = [f"{STAMP} İstanbul ERROR db down", f"{STAMP} INFO İ ok", f"{STAMP} WARN slow", "İİ status=503"]
    missed, found = _missed(lines)
    assert missed == [] and found == {0, 2, 3}
