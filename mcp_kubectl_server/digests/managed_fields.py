"""Who last wrote each field of a workload and of its pod template, from `metadata.managedFields`.

Each managedFields entry names a field manager (the client that wrote: `kubectl-client-side-apply`,
`helm`, `kube-controller-manager`, a team's own `--field-manager`), the operation (Apply or
Update), the subresource written through (`status`, `scale`, or none) and a time, with the set
of fields it owns as a FieldsV1 trie:

    {"f:spec": {"f:template": {"f:spec": {"f:containers": {
        "k:{\\"name\\":\\"app\\"}": {".": {}, "f:resources": {"f:limits": {"f:memory": {}}}}}}}}}

Keys are `f:NAME` (a field or map key), `k:{...}` (a list item by its keys), `v:VALUE` and
`i:INDEX` (a set or list item), `.` (the item itself). An Update hands the fields it writes to its
manager, so each field's owner is the manager that last wrote it; the entry's time is that
manager's latest write (to this field or another it owns). The lines say so:

    field template container app limits.memory, template container app requests.memory: last written 2026-11-29T02:00:05Z by field manager finops-rightsizer (Update)

One line per writer (the fields whose last writer it is), the newest writes first.

Status (written by controllers through the status subresource) is left out.
"""

import json

from mcp_kubectl_server.digests.text import format_time, parse_time

FIELDS_MAX = 30  # fields named on one writer's line
HEADER = ("fields last written (from managedFields: the field manager that last wrote each field, and the "
          "time of that manager's latest write; status not shown):")


def _name(key):
    """A trie key in words: `f:spec` -> spec, `k:{"name":"app"}` -> app."""
    kind, _, rest = key.partition(":")
    if kind == "k":
        try:
            keys = json.loads(rest)
        except ValueError:
            return rest
        return str(keys.get("name") or keys.get("containerPort") or ",".join(map(str, keys.values())))
    return rest if kind in ("f", "v", "i") else key


def owned_paths(trie, path=()):
    """Every owned path in a FieldsV1 trie, as tuples of raw keys."""
    if not isinstance(trie, dict):
        return
    children = [k for k in trie if k != "."]
    if "." in trie or not children:
        if path:
            yield path
    for key in children:
        yield from owned_paths(trie[key], path + (key,))


def _container_label(kind, rest):
    """`container app image`, `container app limits.memory`, `container app env`."""
    if len(rest) < 2:
        return None  # the item itself: its fields say more
    name, fields = _name(rest[0]), [_name(k) for k in rest[1:]]
    if fields[0] == "name":
        return None  # the merge key, owned with the item
    if fields[0] == "resources":
        return f"{kind} {name} {fields[1]}.{fields[2]}" if len(fields) >= 3 else None
    return f"{kind} {name} {fields[0]}"


def _pod_spec_label(rest):
    if not rest:
        return "template spec"
    head = _name(rest[0])
    if head in ("containers", "initContainers"):
        return _container_label("container" if head == "containers" else "init_container", rest[1:])
    if head == "volumes" and len(rest) > 1:
        return f"volume {_name(rest[1])}"
    return head


def field_label(path, template_at):
    """The reported field a leaf path belongs to, or None (status, uid and the like)."""
    names = [_name(k) for k in path]
    if names[:1] == ["metadata"]:
        return names[1] if len(names) > 1 and names[1] in ("labels", "annotations") else None
    if names[:1] != ["spec"]:
        return None
    depth = len(template_at)
    if tuple(names[:depth]) == template_at:
        rest = path[depth:]
        if not rest:
            return "template"
        part = _name(rest[0])
        if part == "metadata":
            sub = _name(rest[1]) if len(rest) > 1 else "metadata"
            return f"template {sub}" if sub in ("labels", "annotations") else None
        if part == "spec":
            label = _pod_spec_label(rest[1:])
            return label and f"template {label}"
        return f"template {part}"
    return names[1] if len(names) > 1 else "spec"


def template_path(kind):
    """Where a kind keeps its pod template, as field names under the object."""
    return ("spec", "jobTemplate", "spec", "template") if kind == "CronJob" else ("spec", "template")


def last_writes(obj):
    """{label: [(time, manager, operation, subresource)], newest first} from the object's managedFields."""
    template_at = template_path(obj.get("kind"))
    owners = {}
    for entry in (obj.get("metadata") or {}).get("managedFields") or []:
        if not isinstance(entry, dict) or entry.get("subresource") == "status":
            continue
        who = (parse_time(entry.get("time")), entry.get("manager") or "unknown",
               entry.get("operation") or "?", entry.get("subresource") or "")
        for path in owned_paths(entry.get("fieldsV1") or {}):
            label = field_label(path, template_at)
            if label and who not in owners.setdefault(label, []):
                owners[label].append(who)
    floor = parse_time("1970-01-01T00:00:00Z")
    return {label: sorted(whos, key=lambda w: w[0] or floor, reverse=True) for label, whos in owners.items()}


def _who(write):
    moment, manager, operation, subresource = write
    how = operation + (f", subresource {subresource}" if subresource else "")
    return f"{format_time(moment)} by field manager {manager} ({how})"


def field_lines(obj, *, limit=FIELDS_MAX):
    """`field A, B: last written TIME by field manager M (Op)` lines, one per writer, newest first."""
    owners = last_writes(obj)
    if not owners:
        return ["field managers: none recorded (the object has no managedFields)"]
    groups = {}
    for label in sorted(owners):
        groups.setdefault(tuple(owners[label]), []).append(label)
    floor = parse_time("1970-01-01T00:00:00Z")
    order = sorted(groups, key=lambda whos: -(whos[0][0] or floor).timestamp())
    lines = [HEADER]
    for whos in order:
        first, *others = whos
        labels = groups[whos]
        shown = ", ".join(labels[:limit]) + (f" and {len(labels) - limit} more" if len(labels) > limit else "")
        also = "; also owned by " + ", ".join(f"{w[1]} ({w[2]})" for w in others) if others else ""
        lines.append(f"field {shown}: last written {_who(first)}{also}")
    return lines
