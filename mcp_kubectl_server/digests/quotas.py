"""get_quotas: a namespace's ResourceQuotas (used vs hard, per resource) and LimitRanges.

Two reads, one digest; resources at or over their hard limit first, flagged in capitals:

    quotas in prod: 1 ResourceQuota (1 resource at or over its limit), 1 LimitRange
    resourcequota prod-quota:
      pods used=5 hard=5 AT LIMIT (100%): new pods that count against it are refused
      requests.cpu used=800m hard=4 (20%)
    limitrange prod-limits:
      Container memory default=512Mi defaultRequest=128Mi max=4Gi

Used figures are the quota controller's own (status.used), never recomputed here.
"""

LIMIT_FIELDS = ("default", "defaultRequest", "min", "max", "maxLimitRequestRatio")


def quota_lines(quota):
    """(flagged_count, lines) for one ResourceQuota."""
    # here, not at the top: fractions (and decimal under it) cost every server start 3 ms of CPU
    from mcp_kubectl_server.digests.quantity import parse_quantity, percent
    md, status = quota.get("metadata") or {}, quota.get("status") or {}
    hard = status.get("hard") or (quota.get("spec") or {}).get("hard") or {}
    used = status.get("used") or {}
    rows = []
    for resource in sorted(hard):
        h, u = parse_quantity(hard[resource]), parse_quantity(used.get(resource))
        line = f"  {resource} used={used.get(resource, 'unknown')} hard={hard[resource]}"
        pct = percent(u, h)
        flagged = u is not None and h is not None and u >= h
        if flagged:
            word = "OVER LIMIT" if u > h else "AT LIMIT"
            line += f" {word}" + (f" ({pct}%)" if pct is not None else "") + \
                ": new objects that count against it are refused"
        elif pct is not None:
            line += f" ({pct}%)"
        rows.append((not flagged, line))
    rows.sort(key=lambda r: r[0])
    scopes = (quota.get("spec") or {}).get("scopes") or []
    head = f"resourcequota {md.get('name', '?')}:" + (f" scopes={','.join(scopes)}" if scopes else "")
    if not rows:
        return 0, [head, "  (no hard limits set)"]
    return sum(1 for ok, _ in rows if not ok), [head] + [line for _, line in rows]


def limit_range_lines(limit_range):
    md = limit_range.get("metadata") or {}
    lines = [f"limitrange {md.get('name', '?')}:"]
    for item in (limit_range.get("spec") or {}).get("limits") or []:
        resources = sorted({r for f in LIMIT_FIELDS for r in (item.get(f) or {})})
        for resource in resources:
            values = " ".join(f"{f}={item[f][resource]}" for f in LIMIT_FIELDS
                              if resource in (item.get(f) or {}))
            lines.append(f"  {item.get('type', '?')} {resource} {values}")
    return lines if len(lines) > 1 else lines + ["  (no limits set)"]


def quotas_digest(quota_list, limit_list, *, namespace):
    """The get_quotas text from the two API lists."""
    quotas = quota_list.get("items") or []
    ranges = limit_list.get("items") or []
    blocks = [quota_lines(q) for q in quotas]
    blocks.sort(key=lambda b: b[0] == 0)
    flagged = sum(count for count, _ in blocks)
    head = (f"quotas in {namespace}: {len(quotas)} ResourceQuota"
            f"{'' if len(quotas) == 1 else 's'} ({flagged} resource{'' if flagged == 1 else 's'} at or "
            f"over its limit), {len(ranges)} LimitRange{'' if len(ranges) == 1 else 's'}")
    lines = [head] + [line for _, block in blocks for line in block]
    for limit_range in ranges:
        lines += limit_range_lines(limit_range)
    if not quotas and not ranges:
        lines.append(f"no ResourceQuota and no LimitRange in namespace {namespace}: nothing here "
                     "caps how many pods or how much CPU and memory it may use")
    return "\n".join(lines)
