"""Values whose secret-ness is named by a sibling key, as Kubernetes writes env variables:

    - name: DB_PASSWORD            {"name": "DB_PASSWORD", "value": "..."}
      value: ...

The key holding the value is only `value`; the `name` beside it says what it is. A pod, a
Deployment or a ConfigMap printed as YAML or JSON by another MCP server carries them so (ours
prints env names only). The value is hidden when the name is secret-named (is_secret_key, the
same test as `DB_PASSWORD=...`). The YAML form needs `value` on the next line at the item's
indentation; the JSON form `"name"` then `"value"` in one object. Linear patterns, gated by a
cheap test.
"""

import re

from .formats import MASK
from .keys import is_secret_key

_NAME = r"[A-Za-z0-9_.\-]{1,200}"
# `- name: X` or `name: X`, then `value: V` where a sibling key of that item stands
_YAML = re.compile(r"^([ \t]*)(- )?name:[ \t]*([\"']?)(" + _NAME + r")\3[ \t]*\r?\n"
                   r"\1(?(2)  )value:[ \t]*([^\n]*)$", re.M)
_JSON = re.compile(r"(\\*\"name\\*\"[ \t]*:[ \t]*\\*\"(" + _NAME + r")\\*\"[ \t]*,[ \t]*"
                   r"\\*\"value\\*\"[ \t]*:[ \t]*)(\\*\")((?:[^\"\\]|\\[^\"])*)(\\*\")")


def _yaml(match):
    value = match.group(5)
    if not value.strip() or value.strip() == MASK or not is_secret_key(match.group(4)):
        return match.group(0)
    quote = value[:1] if value[:1] in "\"'" and value.rstrip()[-1:] == value[:1] else ""
    head = match.group(0)[:match.start(5) - match.start(0)]
    return head + (quote + MASK + quote if quote else MASK)


def _json(match):
    if not match.group(4) or match.group(4) == MASK or not is_secret_key(match.group(2)):
        return match.group(0)
    return match.group(1) + match.group(3) + MASK + match.group(5)


def redact_named_values(text, lowered=None):
    """`text` with the values of secret-named `name`/`value` pairs hidden."""
    low = lowered if lowered is not None else text.lower()
    if "value" not in low or "name" not in low:
        return text
    return _JSON.sub(_json, _YAML.sub(_yaml, text))
