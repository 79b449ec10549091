"""The tables of one `kubectl get KIND,KIND,...`: kubectl prints one table per kind, in the order
asked, a blank line between them, each under its own header row. Tests of the simulator's
columns ask for several kinds in one kubectl run (one kubectl start, about 0.03 s of CPU, where
a run per kind paid one each) and check each kind's table.

    headers(ok(sim, "get", ",".join(kinds), "-n", "prod"), kinds)   # {kind: ["NAME", ...]}
"""


def headers(stdout, kinds):
    """{kind: its table's header row, split on whitespace}; AssertionError when kubectl did not
    print one table per kind (a kind with nothing to list prints none)."""
    tables = [table for table in stdout.split("\n\n") if table.strip()]
    assert len(tables) == len(kinds), f"{len(tables)} tables for {list(kinds)}:\n{stdout}"
    return {kind: table.splitlines()[0].split() for kind, table in zip(kinds, tables)}
