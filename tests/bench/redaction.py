"""Redaction figures for `make bench` (not a test: prints medians, asserts nothing).

Time to redact 10 KB of log text, the current redactor (mcp_kubectl_server.redact) paired with
the previous one (tests/bench/redact_previous.py) in interleaved runs (tests/bench/run.py):
- ordinary log text: every log line of every cluster file, cut into 10 KB pieces;
- the same with one planted secret row (fixtures/kube_sim/scenarios/planted.py) every 20 lines.
Target: at most 2 ms of CPU per 10 KB for the current one.
"""

import json
import time
from pathlib import Path

from fixtures.kube_sim.scenarios import planted
from mcp_kubectl_server.redact import redact
from tests.bench import redact_previous
from tests.bench.run import pair_line, paired

CLUSTERS = Path(__file__).resolve().parents[2] / "fixtures" / "clusters"
PIECE = 10 * 1024


def log_lines():
    lines = []
    for path in sorted(CLUSTERS.glob("*.json")):
        if path.stem == "secrets":
            continue
        for log in json.loads(path.read_text()).get("logs", {}).values():
            for kind in log.values():
                lines += kind if isinstance(kind, list) else []   # not a generated log
    return lines


def pieces(lines, size=PIECE):
    """`lines` joined and cut into pieces of about `size` characters, at line ends."""
    out, current, length = [], [], 0
    for line in lines:
        current.append(line)
        length += len(line) + 1
        if length >= size:
            out.append("\n".join(current))
            current, length = [], 0
    return out


def with_secrets(lines):
    rows = [text.replace("\n", " ") for text, _ in planted.rows(18)]
    out = []
    for i, line in enumerate(lines):
        out.append(line)
        if i % 20 == 19:
            out.append(rows[(i // 20) % len(rows)])
    return out


def per_piece(fn, texts, repeat=10):
    """CPU seconds per piece: `fn` over every piece, `repeat` times (CPU time, not wall time:
    on a shared machine the wait for a core is not the redactor's)."""
    began = time.process_time()
    for _ in range(repeat):
        for text in texts:
            fn(text)
    return (time.process_time() - began) / (repeat * len(texts))


def main():
    lines = log_lines()
    for label, texts in (("ordinary log text", pieces(lines)),
                         ("log text with a planted secret every 20 lines",
                          pieces(with_secrets(lines)))):
        result = paired(lambda: per_piece(redact, texts),
                        lambda: per_piece(redact_previous.redact, texts), pairs=7)
        print(pair_line(f"redact 10 KB, {label} ({len(texts)} pieces)", "previous redactor",
                        result, pairs=7))
