"""MatchScan's block search gives the same matches as matching every line: a block in which the
pattern (multi-line, lowered when it ignores case) matches nowhere is skipped whole, so that
search must never miss a line the per-line match would find; context across block edges."""

import re

import pytest

from mcp_kubectl_server.digests.logmatches import MatchScan, render_groups
from mcp_kubectl_server.digests.logpattern import MatchClock, compile_pattern

LINES = [f"2026-12-07T19:{i // 60:02d}:{i % 60:02d}.000000000Z " + text for i, text in enumerate([
    "INFO GET /a 200", "ERROR Disk full on /var", "info done", "WARN retry 3", "FATAL exit",
    "error: lower case", "  at com.shop.Cart(Cart.java:1)", "Deadlock detected txn=1", "INFO ok",
    "status=503 upstream", "x ERROR y", "ERRORS counted", "password: hunter2", "INFO tail"] * 3)]
PATTERNS = ["error", "^ERROR", "ERROR$", "^error", r"\bERROR\b", r"\S+ detected", "deadlock|fatal",
            r"\d{3} upstream", "[A-Z]{5}", "^\\s+at ", r"(?i)Disk", "tail$", "^$", "errors?"]


def _per_line(regex):
    return [line for line in LINES if regex.search(line.partition(" ")[2])]


def _scan(regex, blocks, context=0):
    with MatchClock(30) as clock:
        scan = MatchScan(regex, clock, context=context, max_matches=200)
        scan.begin("p/c")
        for block in blocks:
            scan.block("\n".join(block))
        scan.end()
    return scan


@pytest.mark.parametrize("ignore_case", [True, False])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_block_search_finds_what_matching_every_line_finds(pattern, ignore_case):
    regex = compile_pattern(pattern, ignore_case=ignore_case)
    expected = [line for line in _per_line(regex) if "hunter2" not in line or "hunter2" not in pattern]
    for size in (1, 5, 17, len(LINES)):
        scan = _scan(regex, [LINES[i:i + size] for i in range(0, len(LINES), size)])
        found = [f"{stamp} {text}" for group in scan.groups for stamp, text, hit in group["lines"] if hit]
        assert found == expected, (pattern, size)
        assert scan.stats == [["p/c", len(LINES), len(expected),
                               expected[0].split()[0] if expected else None,
                               expected[-1].split()[0] if expected else None]]


def test_context_reaches_across_block_edges_and_is_redacted():
    regex = compile_pattern("^INFO tail", ignore_case=False)
    scan = _scan(regex, [LINES[i:i + 4] for i in range(0, len(LINES), 4)], context=2)
    shown = render_groups(list(scan.groups))
    assert sum(line.endswith(": INFO tail") for line in shown) == 3
    assert any("- password: [REDACTED]" in line for line in shown) and "hunter2" not in "\n".join(shown)
    assert shown.count("--") == 2
