"""Every tool the server offers, in one table: the four pod tools and the family modules.

`TOOLS` (name -> tools.Tool) is what tools/list shows and what arguments and scope are checked
against; `run_family_tool` runs a family tool over a reader (get_json / list_json / get_text on
API paths) and turns a failed read into an error result. Each family module owns its tools'
definitions, digests and handlers: services (get_services), config (get_config), storage
(get_storage), quotas (get_quotas).
"""

from . import tools, tools_config, tools_quotas, tools_services, tools_storage
from .raw_reader import RawReader, ReadError

FAMILIES = (tools_services, tools_config, tools_storage, tools_quotas)
TOOLS = dict(tools.TOOLS)
HANDLERS = {}
for _family in FAMILIES:
    TOOLS.update(_family.TOOLS)
    HANDLERS.update(_family.HANDLERS)


def run_family_tool(kubectl, name, arguments, cancelled=None):
    """Run a checked call of a family tool; returns (text, is_error)."""
    try:
        return HANDLERS[name](RawReader(kubectl, cancelled=cancelled), arguments), False
    except ReadError as exc:
        return str(exc), True
