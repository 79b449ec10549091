"""Every tool the server offers, gathered from the tool families, and the one table of handlers.

    TOOLS                       name -> tools.Tool, pods first, then workloads, then nodes
    offered(cluster_tools=True) the Tools for tools/list (without the cluster-scoped ones when
                                the server runs with --no-cluster-tools)
    READER_HANDLERS             name -> handler(reader, args, *, allowed) for the families that
                                read through a Reader (the pod tools run in handlers.py)
"""

from . import tools_nodes, tools_workloads
from .tools import TOOLS as POD_TOOLS

FAMILIES = (tools_workloads, tools_nodes)
TOOLS = dict(POD_TOOLS, **{tool.name: tool for family in FAMILIES for tool in family.TOOLS})
READER_HANDLERS = {name: handler for family in FAMILIES for name, handler in family.HANDLERS.items()}


def offered(*, cluster_tools=True):
    """The tools a server with these settings lists and accepts."""
    return {name: tool for name, tool in TOOLS.items() if cluster_tools or not tool.cluster_scoped}
