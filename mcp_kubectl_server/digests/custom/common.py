"""What every custom object's digest starts with, the generic digest, and the names-only one.

    head_lines(obj)      kind/name age, generation against observedGeneration, owner
    condition_lines(obj) one line per status condition: type=status reason message since
    flatten(value)       a spec or status as `path=value` lines, bounded in depth and count
    secret_lines(obj)    for kinds that hold secrets: names and references, never a value

Every value from the object passes one_line (redaction, one line, a cut) before it is shown.
"""

import re
from datetime import datetime, timezone

from mcp_kubectl_server.digests.text import age, one_line

DEPTH_MAX = 6
LINES_MAX = 40
LIST_ITEMS_MAX = 10
VALUE_MAX = 160
# Groups and kind names whose objects exist to hold secret values (sealed, external, CSI, Vault).
SECRET_GROUPS = frozenset({"bitnami.com", "external-secrets.io", "generators.external-secrets.io",
                           "secrets-store.csi.x-k8s.io", "secrets.hashicorp.com", "onepassword.com"})
_SECRET_KIND = re.compile(r"secret|credential|password|token|vault", re.IGNORECASE)
# Keys whose values are credentials even outside a secret-holding kind (trigger metadata, ...).
CREDENTIAL_KEY = re.compile(r"pass(word|wd)?|secret|token|api[-_]?key|access[-_]?key|credential|"
                            r"connection(string)?|auth|private|cert|sas|\bkey$", re.IGNORECASE)
# ...but a key that names or points at something (secretName, privateKeySecretRef) holds a reference.
REFERENCE_KEY = re.compile(r"(name|ref|kind|fromenv)$", re.IGNORECASE)


def is_credential_key(key):
    """True for a key whose value is a credential (password, connection), not a reference to one."""
    return bool(CREDENTIAL_KEY.search(str(key))) and not REFERENCE_KEY.search(str(key))


def now_utc():
    return datetime.now(timezone.utc)


def md(obj):
    return obj.get("metadata") or {}


def holds_secrets(group, kind):
    """True for a kind whose purpose is to hold secret values (SealedSecret, ExternalSecret, ...)."""
    return group in SECRET_GROUPS or bool(_SECRET_KIND.search(kind or ""))


def head_lines(obj, kind, now):
    meta, status = md(obj), obj.get("status") or {}
    line = f"{kind.lower()}/{meta.get('name', '?')} age={age(meta.get('creationTimestamp'), now)}"
    generation, observed = meta.get("generation"), status.get("observedGeneration")
    if generation is not None:
        line += f" generation={generation}"
        if observed is not None:
            line += f" observedGeneration={observed}" + (" (not yet reconciled)" if observed != generation else "")
    owners = [f"{o.get('kind', '?')}/{o.get('name', '?')}" for o in meta.get("ownerReferences") or []
              if isinstance(o, dict)]
    if owners:
        line += " owner=" + ",".join(owners)
    return [line]


def condition_lines(obj, now, indent="  "):
    lines = []
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if not isinstance(cond, dict):
            continue
        line = f"{indent}condition {one_line(cond.get('type', '?'), 60)}"
        if cond.get("status"):  # Argo CD's conditions have none
            line += f"={one_line(cond['status'], 20)}"
        if cond.get("reason"):
            line += f" reason={one_line(cond['reason'], 80)}"
        if cond.get("message"):
            line += f" message=\"{one_line(cond['message'], 300).replace(chr(34), chr(39))}\""
        if cond.get("lastTransitionTime"):
            line += f" since={cond['lastTransitionTime']} ({age(cond['lastTransitionTime'], now)} ago)"
        lines.append(line)
    return lines


def condition(obj, kind):
    """The condition of type `kind` of an object, or {}."""
    return next((c for c in (obj.get("status") or {}).get("conditions") or []
                 if isinstance(c, dict) and c.get("type") == kind), {})


def value_text(value, limit=VALUE_MAX):
    if isinstance(value, bool):
        return "true" if value else "false"
    return one_line(value, limit)


def flatten(value, prefix="", *, depth=DEPTH_MAX, limit=LINES_MAX, mask=False):
    """`path=value` lines of a nested value: at most `limit` lines (a last line says how many
    were left out), `depth` levels, LIST_ITEMS_MAX items per list; with `mask`, values of keys
    that look like credentials are shown as <redacted>."""
    lines, left = [], [0]

    def walk(item, path, level):
        if isinstance(item, dict) and item and level < depth:
            for key in sorted(item):
                walk(item[key], f"{path}.{key}" if path else str(key), level + 1)
        elif isinstance(item, list) and item and level < depth:
            for i, sub in enumerate(item[:LIST_ITEMS_MAX]):
                walk(sub, f"{path}[{i}]", level + 1)
            if len(item) > LIST_ITEMS_MAX:
                add(f"{path}: {len(item) - LIST_ITEMS_MAX} more items not shown")
        elif isinstance(item, (dict, list)):
            add(f"{path}=" + ("{}" if isinstance(item, dict) and not item else "[]" if not item
                              else f"<{type(item).__name__} nested deeper than {depth}>"))
        else:
            key = path.rsplit(".", 1)[-1]
            shown = "<redacted>" if mask and is_credential_key(key) else value_text(item)
            add(f"{path}={shown}")

    def add(line):
        if len(lines) < limit:
            lines.append(line)
        else:
            left[0] += 1
    walk(value, prefix, 0)
    if left[0]:
        lines.append(f"... {left[0]} more lines not shown (name one object, or read the fields the digest names)")
    return lines


def generic_lines(obj, *, full=False):
    """Spec and status (but its conditions) flattened: the digest of a kind nobody wrote one for."""
    limit = LINES_MAX * (2 if full else 1)
    lines = ["  " + line for line in flatten(obj.get("spec") or {}, "spec", limit=limit, mask=True)]
    status = {k: v for k, v in (obj.get("status") or {}).items() if k != "conditions"}
    lines += ["  " + line for line in flatten(status, "status", limit=limit // 2, mask=True)]
    return lines


_REFERENCE_KEY = re.compile(r"(ref|name|names|key|kind|type|namespace|path|property|store)$", re.IGNORECASE)
_DATA_KEY = re.compile(r"^(data|stringData|encryptedData|binaryData)$")


def secret_lines(obj):
    """Names and references only: keys of data maps (never their values), and the fields whose
    key names a reference (…Ref, …Name, key, kind, path); every other value is left out."""
    lines, seen = [], 0

    def walk(item, path):
        nonlocal seen
        if seen >= LINES_MAX:
            return
        if isinstance(item, dict):
            for key in sorted(item):
                sub = f"{path}.{key}"
                if _DATA_KEY.match(key) and isinstance(item[key], dict):
                    lines.append(f"  {sub}: keys {', '.join(one_line(k, 80) for k in sorted(item[key]))} "
                                 "(values never shown)")
                    seen += 1
                else:
                    walk(item[key], sub)
        elif isinstance(item, list):
            for i, sub in enumerate(item[:LIST_ITEMS_MAX]):
                walk(sub, f"{path}[{i}]")
        elif isinstance(item, str) and _REFERENCE_KEY.search(path.rsplit(".", 1)[-1].rstrip("]0123456789[")):
            lines.append(f"  {path}={one_line(item, 120)}")
            seen += 1
    walk(obj.get("spec") or {}, "spec")
    return lines + ["  (a kind that holds secrets: names and references only, never values)"]
