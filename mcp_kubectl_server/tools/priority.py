"""get_priority_classes: the cluster's PriorityClasses (cluster-scoped, like the node tools).

A family module (see registry.py). One read, /apis/scheduling.k8s.io/v1/priorityclasses, and
the digest in digests/priority.py. PriorityClasses belong to no namespace and name no pod, so
the tool shows nothing of the namespaces out of scope; it is offered unless the server runs with
--no-cluster-tools, which also keeps its path out of the proxy's allow-list.
"""

from mcp_kubectl_server.digests.priority import priority_classes_digest
from mcp_kubectl_server.tools.spec import Tool

ORDER = 92  # with the cluster-wide views, after the node tools
TOOL = Tool(
    "get_priority_classes", "Priority classes",
    "The cluster's PriorityClasses, highest value first: name, value, whether it is the global "
    "default (the priority every pod without a class gets), and its preemption policy. Use it "
    "when pods are preempted or evicted for others (events Preempted, 'preempted by'), when a "
    "Pending pod's priority is in question, or when describe_pod shows a priority class.",
    {}, (), namespaced=False)


def get_priority_classes(reader, args):
    return priority_classes_digest(reader.list_json("/apis/scheduling.k8s.io/v1/priorityclasses"))


TOOLS = [TOOL]
HANDLERS = {TOOL.name: get_priority_classes}
