"""Prometheus series as short text: statistics, trends, and the query_metrics and list_metrics digests.

A range result (matrix) is summarised per series, never sent point by point:

    query_metrics in prod, 30 min to 12:00Z step 30s: 3 series
    {code="500",pod="web-1"} min=0 avg=1.9 max=4.2 last=4.1 rising +0.3/min; biggest change +3.9
      18 min ago (11:42Z); first over 0.5 18 min ago (11:42Z)

An instant result (vector) is one line per series, highest first. At most MAX_SERIES series are
shown, the rest counted with a topk() suggestion, and the whole text stays under a byte cap.
Values that are not numbers (NaN, Inf) are left out of the statistics and counted.
"""

import operator
import time

MAX_SERIES = 20
BYTE_CAP = 16 * 1024


def points(series):
    """[(t, v)] of a matrix series (or [(t, v)] of a vector sample), finite values only."""
    raw = series.get("values") or ([series["value"]] if series.get("value") else [])
    try:
        out = [(float(t), float(v)) for t, v in raw]
    except (TypeError, ValueError):  # not Prometheus' shape: keep what parses
        out = [pair for pair in map(_point, raw) if pair is not None]
    return [(t, v) for t, v in out if v - v == 0]  # NaN and +/-Inf fail this


def _point(sample):
    try:
        t, v = sample
        return float(t), float(v)
    except (TypeError, ValueError):
        return None


def stats(pts):
    """(min, avg, max, last) of [(t, v)], or None when empty."""
    if not pts:
        return None
    values = [v for _, v in pts]
    return min(values), sum(values) / len(values), max(values), values[-1]


def slope_per_minute(pts):
    """Least-squares slope of [(t, v)] in value units per minute, or None for fewer than 3 points."""
    if len(pts) < 3:
        return None
    n = len(pts)
    times, values = [t - pts[0][0] for t, _ in pts], [v for _, v in pts]  # shifted: no cancellation
    st, sv = sum(times), sum(values)
    var = sum(map(operator.mul, times, times)) - st * st / n
    if var <= 0:
        return None
    return (sum(map(operator.mul, times, values)) - st * sv / n) / var * 60


def since_last_drop(pts, drop=0.3):
    """The points after the last fall of more than `drop` (a restart resets a gauge): the climb now."""
    start = 0
    for i in range(1, len(pts)):
        before = pts[i - 1][1]
        if before > 0 and pts[i][1] < before * (1 - drop):
            start = i
    return pts[start:]


def number(value):
    """A value in few characters: 0.0123, 4.2, 1520, 3.4e+09."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1e6 or magnitude < 1e-3:
        return f"{value:.3g}"
    if magnitude >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}"


def clock(t):
    return time.strftime("%H:%MZ", time.gmtime(t))


def when(t, end):
    """'18 min ago (11:42Z)' relative to the query's end time (the clock time last: quotable)."""
    ago = round((end - t) / 60)
    return f"{ago} min ago ({clock(t)})" if ago > 0 else f"now ({clock(t)})"


def trend(pts, fmt=number):
    """'flat', 'rising +0.3/min' or 'falling -2/min': flat when the fit moves less than 5 % of
    the largest value over the whole range."""
    slope = slope_per_minute(pts)
    if slope is None:
        return "too few points for a trend"
    span = (pts[-1][0] - pts[0][0]) / 60
    values = [v for _, v in pts]
    scale = max(max(values), -min(values)) or 1.0
    if abs(slope * span) < 0.05 * scale:
        return "flat"
    word = "rising" if slope > 0 else "falling"
    return f"{word} {'+' if slope > 0 else ''}{fmt(slope)}/min"


def biggest_change(pts):
    """(t, delta) of the largest step between two neighbouring points, or None."""
    if len(pts) < 2:
        return None
    values = [v for _, v in pts]
    steps = list(map(operator.sub, values[1:], values[:-1]))
    up, down = max(steps), min(steps)
    delta = up if up >= -down else down
    return (pts[steps.index(delta) + 1][0], delta) if delta else None


def labels(metric, *, drop=("namespace",)):
    """`name{a="1",b="2"}` without the labels every series shares (the namespace)."""
    name = metric.get("__name__", "")
    kept = [(k, v) for k, v in sorted(metric.items()) if k != "__name__" and k not in drop]
    if not kept:  # an aggregation by (namespace) alone: say which one rather than {}
        kept = [(k, v) for k, v in sorted(metric.items()) if k != "__name__"]
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in kept) + "}"


def range_line(series, *, end, threshold=None, pts=None):
    """One matrix series as min/avg/max/last, trend, biggest change and first time over a threshold."""
    pts = points(series) if pts is None else pts
    head = labels(series.get("metric") or {})
    if not pts:
        return f"{head} no numeric points"
    lo, avg, hi, last = stats(pts)
    line = f"{head} min={number(lo)} avg={number(avg)} max={number(hi)} last={number(last)} {trend(pts)}"
    change = biggest_change(pts)
    if change and abs(change[1]) > 0.2 * max(abs(hi), abs(lo), 1e-12):
        line += f"; biggest change {'+' if change[1] > 0 else ''}{number(change[1])} {when(change[0], end)}"
    if threshold is not None:
        over = next((t for t, v in pts if v > threshold), None)
        line += (f"; first over {number(threshold)} {when(over, end)}" if over is not None
                 else f"; never over {number(threshold)}")
    return line


def query_digest(data, *, namespace, query, end, minutes=None, step=None, threshold=None,
                 max_series=MAX_SERIES, cap=BYTE_CAP):
    """The query_metrics text for Prometheus' data {resultType, result} (vector or matrix)."""
    result = [(points(series), series) for series in data.get("result") or []]
    result.sort(key=lambda item: max((v for _, v in item[0]), default=float("-inf")), reverse=True)
    shown = result[:max_series]
    what = (f"range {minutes} min to {clock(end)} step {step}s" if minutes
            else f"instant at {clock(end)}")
    lines = [f"query_metrics in {namespace}, {what}: {len(result)} series"
             + (f" (the {len(shown)} highest shown)" if len(result) > len(shown) else "")]
    lines.append(f"sent: {query}")
    if not result:
        lines.append("no series matched: list_metrics shows which metric names have series here")
    for pts, series in shown:
        if minutes:
            lines.append(range_line(series, end=end, threshold=threshold, pts=pts))
        else:
            lines.append(f"{labels(series.get('metric') or {})} "
                         f"{number(pts[-1][1]) if pts else 'no numeric value'}")
    if len(result) > len(shown):
        lines.append(f"{len(result) - len(shown)} more series not shown: wrap the query in "
                     f"topk({max_series}, ...) or sum by (namespace, <label>) (...), or narrow its selector")
    return cap_text(lines, cap)


def cap_text(lines, cap):
    """Join lines, stopping before `cap` bytes with a line that says how many were left out."""
    out, size = [], 0
    for i, line in enumerate(lines):
        size += len(line.encode()) + 1
        if size > cap - 120:
            out.append(f"... {len(lines) - i} more lines left out at the {cap} byte cap: narrow the query")
            break
        out.append(line)
    return "\n".join(out)


def list_digest(series_list, *, namespace, minutes, match=None, source="", max_names=200,
                cap=BYTE_CAP):
    """The list_metrics text from /api/v1/series: names with series counts and their labels."""
    names = {}
    for metric in series_list or []:
        entry = names.setdefault(metric.get("__name__", "?"), [0, set()])
        entry[0] += 1
        entry[1].update(k for k in metric if k not in ("__name__", "namespace"))
    total = sum(count for count, _ in names.values())
    lines = [f"metrics with series in {namespace} over the last {minutes} min"
             + (f" matching {match!r}" if match else "")
             + f": {len(names)} names, {total} series" + (f" (from {source})" if source else "")]
    if not names:
        lines.append("no series here: Prometheus scrapes nothing that carries this namespace's label"
                     + (" under that name" if match else ""))
    for name in sorted(names)[:max_names]:
        count, keys = names[name]
        lines.append(f"{name} {count} series; labels: {', '.join(sorted(keys)) or '(none)'}")
    if len(names) > max_names:
        lines.append(f"{len(names) - max_names} more names: give match to narrow the list")
    return cap_text(lines, cap)
