"""`make bench-suite` (`python3 -m tests.bench.suite [REV] [--rounds N]`): how long `make test`
takes on a fresh clone, in units of a fixed CPU workload timed in the same run.

Each round clones this checkout at REV (default HEAD: what is committed, not the work tree) into
a temporary directory, times the reference workload three times, runs `make test` there (a
fresh .venv included, as CI does), times the reference three times more, and prints the wall
time, the CPU of everything `make test` ran, the median reference and the ratio of the two:

    units = wall time of `make test` / median of the six references

The reference is `python3 -c "sum(i*i for i in range(3_000_000))"`, pure interpreter work: it
does not see what starting processes costs on a machine, which is most of the suite's CPU
(docs/development.md has the accounting), so the units move between machines of one kind, and
on a noisy machine from one round to the next; compare rounds of one run. Not part of
`make bench`: each round takes as long as the suite.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REFERENCE = [sys.executable, "-c", "sum(i*i for i in range(3_000_000))"]
REFERENCES = 3   # before, and as many after


def timed(argv, **kwargs):
    """(wall seconds, CPU seconds of the child and all it waited for, CompletedProcess)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, **kwargs)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done


def round_in(clone):
    """One round in a fresh clone: (wall, cpu, median reference, the suite's summary line, rc)."""
    refs = [timed(REFERENCE)[0] for _ in range(REFERENCES)]
    wall, cpu, done = timed(["make", "--no-print-directory", "test"], cwd=clone, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    refs += [timed(REFERENCE)[0] for _ in range(REFERENCES)]
    # the suite's summary: the last line that is not make's own (`make: *** [...] Error 1`)
    lines = [line for line in done.stdout.splitlines() if line.strip()
             and not line.startswith(("make: ", "make["))]
    return wall, cpu, statistics.median(refs), lines[-1] if lines else "", done.returncode


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m tests.bench.suite",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", nargs="?", default="HEAD",
                        help="the commit to measure (default HEAD)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="fresh clones, one after the other (default 3)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be 1 or more, got {args.rounds}")
    rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "--quiet", "--short",
                          f"{args.rev}^{{commit}}"], capture_output=True, text=True)
    if rev.returncode:
        print(f"bench-suite: {args.rev!r} is no commit of this checkout", file=sys.stderr)
        return 2
    rev = rev.stdout.strip()
    print(f"# make test on fresh clones of {rev}, in units of `python3 -c \"{REFERENCE[2]}\"`"
          f" ({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})")
    try:
        return rounds(rev, args.rounds)
    except KeyboardInterrupt:   # ^C between or inside rounds: the clone is removed all the same
        print("bench-suite: interrupted", file=sys.stderr)
        return 130


def rounds(rev, count):
    """Run `count` rounds on fresh clones of `rev`, printing each; 1 when one failed, else 0."""
    units, failed = [], 0
    for n in range(1, count + 1):
        with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
            clone = os.path.join(tmp, "clone")
            subprocess.run(["git", "clone", "-q", ROOT, clone], check=True)
            subprocess.run(["git", "-C", clone, "checkout", "-q", rev], check=True)
            wall, cpu, ref, last, rc = round_in(clone)
        failed += rc != 0
        units.append(wall / ref)
        print(f"round {n}: make test {wall:.1f} s (CPU {cpu:.1f} s), reference {ref:.3f} s:"
              f" {wall / ref:.0f} units; rc={rc}: {last}", flush=True)
    print(f"median {statistics.median(units):.0f} units over {len(units)} round(s)"
          + (f"; {failed} round(s) failed" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
