"""PromQL scope figures for `make bench` (not a test: prints timings, asserts nothing).

For a handful of queries of the kinds the model writes, the time scope_query takes to parse,
check and rewrite one (mcp_kubectl_server/digests/promql.py), paired with the time the real
Prometheus (tests/support/prometheus.py, over the scope tests' series) takes to answer the
rewritten query over loopback HTTP: the parser's share of a query_metrics call.
"""

import time

from mcp_kubectl_server.digests.promql import scope_query
from tests.bench.run import paired, pair_line
from tests.server.promql_reach import SERIES
from tests.support.prometheus import start_prometheus

QUERIES = [
    'sum by (namespace, pod) (rate(http_requests_total{code=~"5.."}[5m]))',
    "sum by (namespace, pod) (rate(container_cpu_usage_seconds_total[5m])) / on(pod) "
    "group_left sum by (namespace, pod) (kube_pod_info)",
    "max_over_time(container_memory_working_set_bytes[1h:1m])",
    "topk(5, sum by (namespace, pod) (rate(http_requests_total[5m]))) > 0",
]
ROUNDS = 50


def scope_all():
    start = time.perf_counter()
    for _ in range(ROUNDS):
        for query in QUERIES:
            scope_query(query, "prod")
    return time.perf_counter() - start


def main():
    """Print the paired figure: parse + scope, against Prometheus answering the same queries."""
    scoped = [scope_query(q, "prod") for q in QUERIES]
    with start_prometheus(SERIES) as prom:
        def answer_all():
            start = time.perf_counter()
            for _ in range(ROUNDS):
                for query in scoped:
                    prom.query(query)
            return time.perf_counter() - start
        result = paired(scope_all, answer_all)
    calls = ROUNDS * len(QUERIES)
    per_query = tuple(t / calls for t in result[:2]) + result[2:]
    print(pair_line(f"scope_query, per query ({len(QUERIES)} queries x {ROUNDS})",
                    "Prometheus answering it over loopback HTTP", per_query))
    cpu = time.process_time()
    scope_all()
    cpu = (time.process_time() - cpu) / calls
    print(f"scope_query, CPU time per query: {cpu * 1e6:,.0f} us (process time: what the parser "
          "costs, whatever else the machine runs)")


if __name__ == "__main__":
    main()
