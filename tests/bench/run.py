"""`make bench`: runs every benchmark module's main() in one process and prints its figures.

Benchmarks are not tests: they assert nothing. Every timing is taken in pairs with its reference
(`paired`): the figure and the reference run one after the other, in alternating order, at least
PAIRS times in the same process on the same machine, and each pair gives a ratio. The medians of
both and the median ratio are printed; on a shared, noisy machine the ratio is the figure to
compare across runs and machines.
"""

import importlib
import platform
import os
import statistics
import sys
import time

MODULES = ("tests.bench.server", "tests.bench.agent", "tests.bench.reader", "tests.bench.stream",
           "tests.bench.serve", "tests.bench.cache", "tests.bench.promql", "tests.bench.context",
           "tests.bench.metrics", "tests.bench.redaction", "tests.bench.kubectl_bytes")
PAIRS = 5


def paired(measure, reference, *, pairs=PAIRS):
    """Time measure() and reference() (each returns seconds) interleaved, `pairs` times, the
    order alternating so neither always runs warm; (median, reference median, median ratio)."""
    ours, refs, ratios = [], [], []
    for i in range(pairs):
        if i % 2:
            ref, our = reference(), measure()
        else:
            our, ref = measure(), reference()
        ours.append(our)
        refs.append(ref)
        ratios.append(our / ref)
    return statistics.median(ours), statistics.median(refs), statistics.median(ratios)


def pair_line(label, reference_label, result, *, pairs=PAIRS):
    """One printed figure: both medians in ms and the median ratio of the pairs."""
    ours, ref, ratio = result
    return (f"{label}: {ours * 1000:,.1f} ms; {reference_label}: {ref * 1000:,.1f} ms; "
            f"ratio {ratio:.2f} (medians of {pairs} interleaved pairs)")


def main():
    """Print the machine line, then each benchmark module's figures."""
    print(f"# triage-agent benchmarks, {time.strftime('%Y-%m-%d')}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}")
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            print(f"\n## {name}: not available ({exc})")
            continue
        print(f"\n## {name}")
        module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
