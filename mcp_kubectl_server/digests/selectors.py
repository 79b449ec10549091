"""Label selectors as the API spells them: matching labels against them and saying them in words.

Two shapes exist. A LabelSelector ({matchLabels, matchExpressions}; NetworkPolicy peers, pod
affinity terms, topology spread) where an empty selector selects everything. A node selector
requirement list (node affinity terms) which also knows Gt and Lt. Both use kubectl's own
syntax in words: `app=web,tier in (a,b),!canary`.
"""


def requirement_matches(req, labels):
    """One {key, operator, values} requirement (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
    key, op, values = req.get("key", ""), req.get("operator", ""), req.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False  # an operator this reader does not know selects nothing, as the API would refuse it


def selector_matches(selector, labels):
    """A LabelSelector against a label map; {} selects everything, None selects nothing."""
    if selector is None:
        return False
    labels = labels or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    return all(requirement_matches(r, labels) for r in selector.get("matchExpressions") or [])


def requirement_text(req):
    key, op, values = req.get("key", "?"), req.get("operator", "?"), req.get("values") or []
    joined = ",".join(map(str, values))
    return {"In": f"{key} in ({joined})", "NotIn": f"{key} notin ({joined})", "Exists": key,
            "DoesNotExist": f"!{key}", "Gt": f"{key}>{joined}", "Lt": f"{key}<{joined}"}.get(
        op, f"{key} {op} ({joined})")


def selector_text(selector, *, empty="everything"):
    """A LabelSelector in kubectl's syntax; `empty` when it has no term (it selects all)."""
    selector = selector or {}
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    parts += [requirement_text(r) for r in selector.get("matchExpressions") or []]
    return ",".join(parts) or empty
