"""What a read-only tool is: its MCP definition, its argument checks and its namespace scope.

A `Tool` is declared once, in its family module (tools/<family>.py, collected by registry.py), with its
input schema; `check_arguments` returns field-level messages the model can act on (names,
selectors, enums such as a workload kind), `check_scope`
refuses namespaces outside the allow-list. Definitions never depend on the allow-list. Every tool
is annotated read-only, non-destructive, idempotent and closed-world, because the annotation
defaults in MCP are the unsafe ones.
"""

from collections import namedtuple

from mcp_kubectl_server.validate import DNS1123_LABEL, DNS1123_SUBDOMAIN, SELECTOR_MAX, SELECTOR_PATTERN
from mcp_kubectl_server.validate import check_label, check_selector, check_subdomain

TAIL_DEFAULT = 200
TAIL_MAX = 1000
ANNOTATIONS = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}

NAMESPACE = {"type": "string", "pattern": DNS1123_LABEL, "maxLength": 63,
             "description": "Kubernetes namespace; must be one of this server's allowed namespaces."}
POD = {"type": "string", "pattern": DNS1123_SUBDOMAIN, "maxLength": 253,
       "description": "Exact pod name as printed by get_pods (e.g. checkout-6f8d9c7b5d-x7k2p)."}


class Tool(namedtuple("Tool", "name title description properties required checks namespaced",
                       defaults=(None, True))):
    """One tool. `checks` adds value checks for fields the shared table (_CHECKS) does not know,
    {field: fn(field, value) -> message or None}; `namespaced=False` marks a cluster-scoped tool,
    which has no namespace argument and is not scope-checked here (its family bounds it).
    A namedtuple rather than a dataclass: dataclasses imports inspect, and the two cost a server
    start about 9 ms of CPU (of some 65)."""

    __slots__ = ()

    def __new__(cls, name, title, description, properties, required, checks=None, namespaced=True):
        return super().__new__(cls, name, title, description, properties, required,
                               {} if checks is None else checks, namespaced)

    def definition(self):
        """The tools/list entry. It never names the allowed namespaces: the same bytes for every
        server of one version, so a model API's prompt cache (tools come first in it) is shared by
        runs over different namespaces. The scope is in the agent's first user turn and in every
        refusal (check_scope)."""
        return {"name": self.name, "title": self.title, "description": self.description,
                "inputSchema": {"type": "object", "properties": self.properties,
                                "required": list(self.required), "additionalProperties": False},
                "annotations": dict(ANNOTATIONS, title=self.title)}


def whole_number(low, high):
    """A check for a whole-number argument from `low` to `high`."""
    def check(name, value):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return f"{name}: must be a whole number from {low} to {high}, got {value!r:.40}"
        return None
    return check


def check_flag(name, value):
    """The check for a boolean argument."""
    return None if isinstance(value, bool) else f"{name}: must be true or false, got {value!r:.40}"


_CHECKS = {"namespace": check_label, "name": check_subdomain, "container": check_label,
           "selector": check_selector}


def _check_value(tool, name, value):
    if name in tool.checks:
        return tool.checks[name](name, value)
    if name in _CHECKS:
        return _CHECKS[name](name, value)
    if name == "previous" and not isinstance(value, bool):
        return f"previous: must be true or false, got {value!r:.40}"
    if name == "tail" and (isinstance(value, bool) or not isinstance(value, int)
                            or not 1 <= value <= TAIL_MAX):
        return f"tail: must be a whole number from 1 to {TAIL_MAX}, got {value!r:.40}"
    return None


def check_arguments(tool, arguments):
    """Field-level problems with `arguments` for `tool` (empty list: safe to run)."""
    problems = []
    for name in sorted(set(arguments) - set(tool.properties)):
        problems.append(f"{name!r:.60}: unknown argument; {tool.name} accepts only "
                        f"{', '.join(tool.properties) or 'no arguments'}")
    for name in tool.required:
        if name not in arguments:
            problems.append(f"{name}: is required")
    for name, schema in tool.properties.items():
        if name in arguments:
            problem = _check_value(tool, name, arguments[name])
            if not problem and "enum" in schema and arguments[name] not in schema["enum"]:
                problem = f"{name}: must be one of {', '.join(schema['enum'])}, got {arguments[name]!r:.40}"
            if problem:
                problems.append(problem)
    return problems


def check_scope(tool, arguments, allowed_namespaces):
    """None when the (already checked) namespace is allowed, else a refusal naming the allowed ones."""
    if not tool.namespaced:
        return None
    namespace = arguments.get("namespace")
    if namespace in allowed_namespaces:
        return None
    return (f"namespace {namespace!r} is outside this server's scope; allowed namespaces: "
            f"{', '.join(allowed_namespaces)}. Ask about one of those instead.")
