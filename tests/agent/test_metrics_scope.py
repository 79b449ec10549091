"""The loop's own scope proof on the metrics tools (any server's, not only ours): each carries a
namespace argument, and PromQL that names a namespace itself is refused before it is sent."""

import pytest

from mcp_kubectl_server.tools.metrics import TOOLS
from triage_agent import scope

DEFINITIONS = {tool.name: tool.definition() for tool in TOOLS}


def check(tool, arguments, namespaces=("prod",)):
    found = scope.scope_of(DEFINITIONS[tool]["inputSchema"])
    return scope.check_scope(arguments, found, list(namespaces), tool=tool)


@pytest.mark.parametrize("tool", sorted(DEFINITIONS))
def test_every_metrics_tool_names_its_namespace(tool):
    assert scope.scope_of(DEFINITIONS[tool]["inputSchema"]).keys == ("namespace",)
    assert check(tool, {"namespace": "staging"}).refusal[0] == "out_of_scope"
    assert check(tool, {}, ("prod", "staging")).refusal[0] == "namespace_required"
    assert check(tool, {}).arguments["namespace"] == "prod"  # the one namespace, filled in


@pytest.mark.parametrize("promql", ['up{namespace="staging"}', 'up{namespace=~".+"}',
                                    'sum by (pod) (x{namespace!="prod"})', 'x{ namespace = "prod" }'])
def test_promql_that_selects_a_namespace_is_refused_by_the_loop(promql):
    refusal = check("query_metrics", {"namespace": "prod", "promql": promql}).refusal
    assert refusal[0] == "out_of_scope" and "selects on a namespace" in refusal[1]


def test_ordinary_promql_passes_the_loop():
    for promql in ("sum by (namespace, code) (rate(http_requests_total[5m]))",
                   "rate(x[5m]) - rate(y[5m])", 'label_replace(x, "src", "$1", "namespace", "(.*)")'):
        assert check("query_metrics", {"namespace": "prod", "promql": promql}).refusal is None, promql
