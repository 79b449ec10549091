"""The tool registry: every family module of this package (tools/*.py but spec and registry),
collected on first use.

A family module declares `TOOLS` (a list of tools.Tool) and `HANDLERS` ({name: fn(reader, args)
-> text}), and optionally `ORDER` (a number; lower comes first in tools/list, default 100, then
by module name). Adding a module adds its tools: nothing else is edited. A name declared twice,
or a tool without a handler, is a programming error and fails loudly at load.

`run_tool(reader, name, arguments) -> (text, is_error)` runs a checked call: a ReadError becomes
an isError result; CancelledError goes up to the server, which then sends no reply.
"""

import functools
import importlib
import os
from collections import namedtuple

from mcp_kubectl_server.read.reader import ReadError

NOT_FAMILIES = ("spec", "registry")


# tools: name -> Tool, in tools/list order; handlers: name -> fn(reader, args) -> text
Registry = namedtuple("Registry", "tools handlers")


def family_modules():
    """The family modules of this package, in tools/list order (its directory's *.py files:
    pkgutil would find the same, and cost a server start more than the listing)."""
    names = sorted(name[:-3] for name in os.listdir(os.path.dirname(__file__))
                   if name.endswith(".py") and name[:-3].isidentifier()
                   and name[:-3] not in ("__init__",) + NOT_FAMILIES)
    modules = [importlib.import_module(f"{__package__}.{name}") for name in names]
    return sorted(modules, key=lambda m: (getattr(m, "ORDER", 100), m.__name__))


def collect(modules):
    """A Registry from family modules (raises ValueError on a duplicate name or a missing handler)."""
    tools, handlers = {}, {}
    for module in modules:
        for tool in module.TOOLS:
            if tool.name in tools:
                raise ValueError(f"tool {tool.name!r} is declared twice ({module.__name__})")
            if tool.name not in module.HANDLERS:
                raise ValueError(f"tool {tool.name!r} has no handler in {module.__name__}")
            tools[tool.name] = tool
        extra = set(module.HANDLERS) - {tool.name for tool in module.TOOLS}
        if extra:
            raise ValueError(f"{module.__name__} has handlers without tools: {sorted(extra)}")
        handlers.update(module.HANDLERS)
    return Registry(tools, handlers)


@functools.lru_cache(maxsize=None)
def load(*, cluster_tools=True, metrics_tools=False):
    """The registry of this package's tools (imported once, on first use); without the
    cluster-scoped tools (namespaced=False) when `cluster_tools` is false (--no-cluster-tools),
    and with the families that need Prometheus (NEEDS_PROMETHEUS) only when `metrics_tools` is
    true (the server has --prometheus-url or --prometheus-service)."""
    modules = [m for m in family_modules()
               if metrics_tools or not getattr(m, "NEEDS_PROMETHEUS", False)]
    full = collect(modules)
    if cluster_tools:
        return full
    tools = {name: tool for name, tool in full.tools.items() if tool.namespaced}
    return Registry(tools, {name: full.handlers[name] for name in tools})


def run_tool(reader, name, arguments, *, registry=None):
    """Run a checked tool call; returns (text, is_error)."""
    handler = (registry or load(metrics_tools=True)).handlers[name]
    try:
        return handler(reader, arguments), False
    except ReadError as exc:
        return str(exc), True
