"""`make test`: the whole suite as one pytest process per core, side by side.

    python3 -m tests.support.run_shards [--shards N] [pytest arguments ...]

Most of the suite's time is CPU spent in child processes (interpreters, kubectl) that a single
pytest process runs one after another, leaving the other cores idle. Here N pytest processes
(default: the number of cores, at most 4) each run every N-th test (tests/support/shard.py), so every
test runs exactly once. The first shard prints as it goes; the others write to temp files,
printed whole after it, so the outputs do not interleave; a last line gives the total over all
shards ("total: N passed, N failed, N skipped"). The exit code is the first nonzero one
among them (a shard that collected nothing counts as passed). `python3 -m pytest` alone still
runs the suite serially.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NO_TESTS = 5  # pytest's exit code when a shard collected nothing


def start(k, n, extra, out, counts):
    """One pytest process for shard k of n, its output to `out` (None: this process's stdout).
    Without pytest's cache: the shards would overwrite each other's last-failed lists."""
    return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p",
                             "tests.support.shard", "--shard", f"{k}/{n}", "--shard-counts", str(counts),
                             *extra], cwd=ROOT, stdout=out,
                            stderr=subprocess.STDOUT if out else None)


def total_line(paths):
    """'total: N passed, N failed, N skipped' over the shards' count files (errors count as
    failed; a shard that wrote none, because it died, counts as one failure)."""
    total = {"passed": 0, "failed": 0, "skipped": 0}
    for path in paths:
        try:
            counts = json.loads(Path(path).read_text())
        except (OSError, ValueError):
            total["failed"] += 1
            continue
        total["passed"] += counts["passed"]
        total["failed"] += counts["failed"] + counts["error"]
        total["skipped"] += counts["skipped"]
    return f"total: {total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m tests.support.run_shards", allow_abbrev=False,
                                     description="Run the test suite as one pytest per core.")
    parser.add_argument("--shards", type=int, default=min(os.cpu_count() or 1, 4),
                        help="pytest processes to run side by side (default: cores, at most 4)")
    args, extra = parser.parse_known_args(argv)
    if args.shards < 1:
        parser.error("--shards must be at least 1")
    with tempfile.TemporaryDirectory(prefix="triage-shards-") as tmp:
        outs = [None] + [open(Path(tmp) / f"shard{k}.txt", "w+b")
                         for k in range(2, args.shards + 1)]
        counts = [Path(tmp) / f"shard{k}.json" for k in range(1, args.shards + 1)]
        print(f"=== shard 1/{args.shards} ===", flush=True)
        procs = [start(k, args.shards, extra, out, count)
                 for k, (out, count) in enumerate(zip(outs, counts), 1)]
        try:
            codes = [proc.wait() for proc in procs]
        except KeyboardInterrupt:  # the shards got the same ^C; let them print what they have
            codes = [proc.wait() for proc in procs]
        for k, out in enumerate(outs[1:], 2):
            out.seek(0)
            sys.stdout.write(f"\n=== shard {k}/{args.shards} ===\n")
            sys.stdout.write(out.read().decode("utf-8", "replace"))
            out.close()
        print("\n" + total_line(counts), flush=True)
    failed = [code for code in codes if code not in (0, NO_TESTS)]
    return failed[0] if failed else 0


if __name__ == "__main__":
    sys.exit(main())
