"""`make bench-suite` (`python3 -m tests.bench.suite [REV] [--rounds N] [--against BASE]`): how
long `make test` takes on a fresh clone, in units of a fixed CPU workload timed in the same run.

Each round clones this checkout at REV (default HEAD: what is committed, not the work tree) into
a temporary directory, times the reference workload three times, runs `make test` there (its
.venv linked to the machine's kept venv of the same pins, as in CI's clone; with --fresh-venv
built from an empty venv cache, as on a machine's first clone: tests/support/venv_cache.py),
times the reference three times more, and prints the wall
time, the CPU of everything `make test` ran, the median reference and the ratio of the two:

    units = wall time of `make test` / median of the six references

The reference is `python3 -c "sum(i*i for i in range(3_000_000))"` run by the interpreter that
runs this module, named in the first line printed (not `python3` looked up on PATH, which may be a
version manager's shim: pyenv's adds about 0.05 s to each run), pure interpreter work: it
does not see what starting processes costs on a machine, which is most of the suite's CPU
(docs/development.md has the accounting), so the units move between machines of one kind, and
on a noisy machine from one round to the next; compare rounds of one run. Not part of
`make bench`: each round takes as long as the suite.

With --against BASE, each round measures BASE as well, in turns (REV first in odd rounds, BASE
first in even ones), and prints REV's wall time as a share of BASE's; the last line gives the
median share. Both suites see the same machine within a round, so the share moves much less
with the hour than the units do: it is the figure to compare two commits by.
"""

import argparse
import os
import resource
import signal
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


def round_in(clone, *, env=None):
    """One round in a fresh clone: (wall, cpu, median reference, the suite's summary line, rc)."""
    refs = [timed(REFERENCE)[0] for _ in range(REFERENCES)]
    wall, cpu, done = timed(["make", "--no-print-directory", "test"], cwd=clone, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, env=env)
    refs += [timed(REFERENCE)[0] for _ in range(REFERENCES)]
    # the suite's summary: the last line that is not make's own (`make: *** [...] Error 1`)
    lines = [line for line in done.stdout.splitlines() if line.strip()
             and not line.startswith(("make: ", "make["))]
    return wall, cpu, statistics.median(refs), lines[-1] if lines else "", done.returncode


def commit(name):
    """The short hash of the commit `name` names in this checkout, or None."""
    found = subprocess.run(["git", "-C", ROOT, "rev-parse", "--verify", "--quiet", "--short",
                            f"{name}^{{commit}}"], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 else None


def interrupts_as_usual():
    """Started as a background job (`make bench-suite &`, nohup), this process has SIGINT
    ignored, and every `make test` it runs would inherit that: a suite's Ctrl-C tests then wait
    for children that do not stop (an older commit's suite failed two of them and took a minute
    longer that way). Python's own handler is reset at exec, so the children start as from a
    shell."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m tests.bench.suite",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", nargs="?", default="HEAD",
                        help="the commit to measure (default HEAD)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="fresh clones, one after the other (default 3)")
    parser.add_argument("--fresh-venv", action="store_true",
                        help="each round builds its test venv from an empty venv cache, as a "
                             "machine's first clone does (default: the kept venv is linked)")
    parser.add_argument("--against", metavar="BASE",
                        help="a commit measured in the same rounds, in turns with REV; each "
                             "round prints REV's time as a share of BASE's")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be 1 or more, got {args.rounds}")
    revs = []
    for name in [args.rev] + ([args.against] if args.against is not None else []):
        rev = commit(name)
        if rev is None:
            print(f"bench-suite: {name!r} is no commit of this checkout", file=sys.stderr)
            return 2
        revs.append(rev)
    interrupts_as_usual()
    print(f"# make test on fresh clones of {' and '.join(revs)}, in units of"
          f" `python3 -c \"{REFERENCE[2]}\"` run by {sys.executable} ({os.cpu_count()} cores,"
          f" load average {os.getloadavg()[0]:.1f})")
    try:
        return rounds(revs, args.rounds, fresh_venv=args.fresh_venv)
    except KeyboardInterrupt:   # ^C between or inside rounds: the clone is removed all the same
        print("bench-suite: interrupted", file=sys.stderr)
        return 130


def round_at(rev, *, fresh_venv=False):
    """round_in a fresh clone of this checkout at `rev`, removed afterwards (with fresh_venv,
    and an empty venv cache of its own)."""
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        clone = os.path.join(tmp, "clone")
        subprocess.run(["git", "clone", "-q", ROOT, clone], check=True)
        subprocess.run(["git", "-C", clone, "checkout", "-q", rev], check=True)
        env = {**os.environ, "TRIAGE_TEST_VENV_CACHE": os.path.join(tmp, "venvs")}
        return round_in(clone, env=env if fresh_venv else None)


def rounds(revs, count, *, fresh_venv=False):
    """Run `count` rounds on fresh clones of each of `revs` (one commit, or REV and BASE in
    turns; the same commit twice measures the noise), printing each; 1 when one failed, else 0."""
    units, shares, failed = [[] for _ in revs], [], 0
    for n in range(1, count + 1):
        walls = [None] * len(revs)
        for i in range(len(revs)) if n % 2 else reversed(range(len(revs))):
            wall, cpu, ref, last, rc = round_at(revs[i], fresh_venv=fresh_venv)
            failed += rc != 0
            walls[i] = wall
            units[i].append(wall / ref)
            which = f"{revs[i]} " if len(revs) > 1 else ""
            print(f"round {n}: {which}make test {wall:.1f} s (CPU {cpu:.1f} s), reference"
                  f" {ref:.3f} s: {wall / ref:.0f} units; rc={rc}: {last}", flush=True)
        if len(revs) > 1:
            shares.append(walls[0] / walls[1])
            print(f"round {n}: {revs[0]} took {shares[-1]:.2f} of {revs[1]}'s time", flush=True)
    print("median " + ", ".join(f"{statistics.median(units[i]):.0f} units"
                                + (f" for {rev}" if len(revs) > 1 else "")
                                for i, rev in enumerate(revs))
          + (f"; {revs[0]} took {statistics.median(shares):.2f} of {revs[1]}'s time"
             if shares else "")
          + f" over {count} round(s)" + (f"; {failed} run(s) failed" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
