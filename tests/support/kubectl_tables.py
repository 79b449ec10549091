"""The real kubectl against a simulator, and the tables of one `kubectl get KIND,KIND,...`:
kubectl prints one table per kind, in the order asked, a blank line between them, each under its
own header row (and, when more than one kind is asked, each name with its kind:
persistentvolumeclaim/x). Tests of the simulator ask for several kinds in one kubectl run (one
kubectl start, about 0.045 s of CPU, where a run per kind paid one each) and check each kind's
table.

    pvcs, classes = tables(sim, "pvc,storageclasses", "-n", "prod")   # one run, two tables
    headers(ok(sim, "get", ",".join(kinds), "-n", "prod"), kinds)    # {kind: ["NAME", ...]}
"""

import subprocess


def kubectl(sim, *args, timeout=60):
    """Run the real kubectl against `sim`; returns CompletedProcess (text)."""
    return subprocess.run(["kubectl", "--kubeconfig", sim.kubeconfig, *args],
                          capture_output=True, text=True, timeout=timeout)


def ok(sim, *args):
    """kubectl's stdout; AssertionError with its stderr when it did not exit 0."""
    result = kubectl(sim, *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def rows(table_text):
    """Table output -> list of column lists (header dropped)."""
    return [line.split() for line in table_text.splitlines()[1:] if line.strip()]


def split(stdout, kinds):
    """The tables of `stdout`, one per kind in `kinds`; AssertionError when kubectl did not print
    one table per kind (a kind with nothing to list prints none)."""
    found = [table for table in stdout.split("\n\n") if table.strip()]
    assert len(found) == len(kinds), f"{len(found)} tables for {list(kinds)}:\n{stdout}"
    return found


def tables(sim, kinds, *args):
    """Each kind's table from one `kubectl get KINDS ARGS` (KINDS comma-separated), in order."""
    return split(ok(sim, "get", kinds, *args), kinds.split(","))


def headers(stdout, kinds):
    """{kind: its table's header row, split on whitespace}."""
    return {kind: table.splitlines()[0].split() for kind, table in zip(kinds, split(stdout, kinds))}
