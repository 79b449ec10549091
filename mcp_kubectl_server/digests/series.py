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
from itertools import compress

MAX_SERIES = 20
BYTE_CAP = 16 * 1024


def columns(series):
    """(times, values) of a matrix series (or of a vector sample) as floats, finite values only.

    One pass in C for Prometheus' shape ([[t, "v"], ...]): the pairs transposed, each column
    converted by map(float); anything else goes point by point, keeping what parses."""
    raw = series.get("values") or ([series["value"]] if series.get("value") else [])
    try:
        if sum(map(len, raw)) != 2 * len(raw):  # a sample that is not a pair
            raise ValueError
        times, values = zip(*raw)
        times, values = list(map(float, times)), list(map(float, values))
    except (TypeError, ValueError):  # not Prometheus' shape (or no points): keep what parses
        pairs = [pair for pair in map(_point, raw) if pair is not None]
        times, values = [t for t, _ in pairs], [v for _, v in pairs]
    total = sum(values)
    if total - total == 0:  # a NaN or an infinity makes the sum one, too: all values finite
        return times, values
    finite = [v - v == 0 for v in values]  # NaN and +/-Inf fail this
    return list(compress(times, finite)), list(compress(values, finite))


def points(series):
    """[(t, v)] of a matrix series (or [(t, v)] of a vector sample), finite values only."""
    return list(zip(*columns(series)))


def _point(sample):
    try:
        t, v = sample
        return float(t), float(v)
    except (TypeError, ValueError):
        return None


def _split(pts):
    return [t for t, _ in pts], [v for _, v in pts]


def stats(pts):
    """(min, avg, max, last) of [(t, v)], or None when empty."""
    return _stats(_split(pts)[1])


def _stats(values):
    if not values:
        return None
    return min(values), sum(values) / len(values), max(values), values[-1]


def slope_per_minute(pts):
    """Least-squares slope of [(t, v)] in value units per minute, or None for fewer than 3 points."""
    return _slope(*_split(pts))


def _slope(times, values):
    n = len(times)
    if n < 3:
        return None
    start = times[0]
    times = [t - start for t in times]  # shifted: no cancellation
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
    return _trend(*_split(pts), fmt=fmt)


def _trend(times, values, *, extremes=None, fmt=number):
    slope = _slope(times, values)
    if slope is None:
        return "too few points for a trend"
    span = (times[-1] - times[0]) / 60
    low, high = extremes or (min(values), max(values))
    scale = max(high, -low) or 1.0
    if abs(slope * span) < 0.05 * scale:
        return "flat"
    word = "rising" if slope > 0 else "falling"
    return f"{word} {'+' if slope > 0 else ''}{fmt(slope)}/min"


def biggest_change(times, values):
    """(t, delta) of the largest step between two neighbouring points, or None."""
    if len(values) < 2:
        return None
    steps = list(map(operator.sub, values[1:], values))  # map stops at the shorter one
    up, down = max(steps), min(steps)
    delta = up if up >= -down else down
    return (times[steps.index(delta) + 1], delta) if delta else None


def labels(metric, *, drop=("namespace",)):
    """`name{a="1",b="2"}` without the labels every series shares (the namespace)."""
    name = metric.get("__name__", "")
    kept = [(k, v) for k, v in sorted(metric.items()) if k != "__name__" and k not in drop]
    if not kept:  # an aggregation by (namespace) alone: say which one rather than {}
        kept = [(k, v) for k, v in sorted(metric.items()) if k != "__name__"]
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in kept) + "}"


def range_line(series, *, end, threshold=None, cols=None):
    """One matrix series as min/avg/max/last, trend, biggest change and first time over a threshold;
    `cols` are its columns() when the caller has them already."""
    times, values = columns(series) if cols is None else cols
    head = labels(series.get("metric") or {})
    if not values:
        return f"{head} no numeric points"
    lo, avg, hi, last = _stats(values)
    line = (f"{head} min={number(lo)} avg={number(avg)} max={number(hi)} last={number(last)} "
            f"{_trend(times, values, extremes=(lo, hi))}")
    change = biggest_change(times, values)
    if change and abs(change[1]) > 0.2 * max(abs(hi), abs(lo), 1e-12):
        line += f"; biggest change {'+' if change[1] > 0 else ''}{number(change[1])} {when(change[0], end)}"
    if threshold is not None:
        over = next(t for t, v in zip(times, values) if v > threshold) if hi > threshold else None
        line += (f"; first over {number(threshold)} {when(over, end)}" if over is not None
                 else f"; never over {number(threshold)}")
    return line


def query_digest(data, *, namespace, query, end, minutes=None, step=None, threshold=None,
                 max_series=MAX_SERIES, cap=BYTE_CAP):
    """The query_metrics text for Prometheus' data {resultType, result} (vector or matrix)."""
    result = [(columns(series), series) for series in data.get("result") or []]
    result.sort(key=lambda item: max(item[0][1], default=float("-inf")), reverse=True)
    shown = result[:max_series]
    what = (f"range {minutes} min to {clock(end)} step {step}s" if minutes
            else f"instant at {clock(end)}")
    lines = [f"query_metrics in {namespace}, {what}: {len(result)} series"
             + (f" (the {len(shown)} highest shown)" if len(result) > len(shown) else "")]
    lines.append(f"sent: {query}")
    if not result:
        lines.append("no series matched: list_metrics shows which metric names have series here")
    for cols, series in shown:
        if minutes:
            lines.append(range_line(series, end=end, threshold=threshold, cols=cols))
        else:
            values = cols[1]
            lines.append(f"{labels(series.get('metric') or {})} "
                         f"{number(values[-1]) if values else 'no numeric value'}")
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
