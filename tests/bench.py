"""`make bench`: runs every benchmark module's main() in one process and prints its figures.

Benchmarks are not tests: they assert nothing and print medians, so that figures for the README
are measured in one run on one machine and compared as ratios.
"""

import importlib
import platform
import os
import sys
import time

MODULES = ("tests.bench_server", "tests.bench_agent", "tests.bench_reader", "tests.bench_stream",
           "tests.bench_serve")


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
