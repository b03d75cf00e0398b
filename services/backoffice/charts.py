"""Pictures for the overview, drawn from our own data as inline SVG (no script, no CDN):
payments per minute by outcome over the last hour, each breaker's state, each queue's
depth and the age of the oldest unknown payment over time.

The last three need history: a periodic job samples them into a Redis list (the last
hour at SWEEP_INTERVAL_S); the first is read from the transitions of the last hour (an
index on their time, so history never slows it)."""

from __future__ import annotations

import json
import math
import time
from datetime import timedelta
from typing import Any

from markupsafe import Markup, escape
from redis.exceptions import RedisError
from sqlalchemy import select

from extensions import db, redis_client
from models import PaymentStatus, PaymentTransition
from models.types import utcnow

SAMPLES_KEY = "dashboard:samples"
KEEP = 120  # samples: an hour at 30 s
WIDTH, HEIGHT, PAD = 560, 140, 28
COLORS = ["#1565c0", "#ef6c00", "#00838f", "#5d4037", "#757575", "#ad1457"]
# Colours by meaning, the same on every chart: success green, failure red, a person's
# attention orange, not known yet purple. Other series take COLORS in turn.
MEANING = {
    "succeeded": "#2e7d32",
    "failed": "#c62828",
    "needs_review": "#ef6c00",
    "unknown": "#6a1b9a",
    "oldest unknown (min)": "#6a1b9a",
}
CHARTED = (
    PaymentStatus.SUCCEEDED,
    PaymentStatus.FAILED,
    PaymentStatus.UNKNOWN,
    PaymentStatus.NEEDS_REVIEW,
)
LEGEND_COLUMNS = 4
STATE_LEVEL = {"closed": 0, "forced_closed": 0, "half_open": 1, "open": 2, "forced_open": 2}


def record_sample(snapshot: dict[str, Any]) -> None:
    """Keep one sample (the periodic job's): breakers, queues, oldest unknown."""
    entry = json.dumps({"t": time.time(), **snapshot})
    pipe = redis_client.client.pipeline()
    pipe.lpush(SAMPLES_KEY, entry)
    pipe.ltrim(SAMPLES_KEY, 0, KEEP - 1)
    pipe.execute()


def samples() -> list[dict[str, Any]]:
    try:
        raw = redis_client.client.lrange(SAMPLES_KEY, 0, KEEP - 1)
    except RedisError:
        return []
    return [json.loads(r) for r in reversed(raw)]


def payments_per_minute(now: Any = None) -> dict[str, list[tuple[float, float]]]:
    """Outcomes per minute over the last hour, from the transitions of that hour."""
    now = now or utcnow()
    since = now - timedelta(hours=1)
    rows = db.session.execute(
        select(PaymentTransition.to_status, PaymentTransition.created_at).where(
            PaymentTransition.created_at >= since,
            PaymentTransition.to_status.in_(CHARTED),
        )
    ).all()
    start = since.timestamp() // 60 * 60
    series: dict[str, list[tuple[float, float]]] = {}
    for status in CHARTED:
        counts = [0] * 61
        for to_status, at in rows:
            if to_status == status:
                counts[min(60, int((at.timestamp() - start) // 60))] += 1
        series[status.value] = [(start + 60 * i, float(c)) for i, c in enumerate(counts)]
    return series


def overview_charts() -> dict[str, Markup]:
    history = samples()
    breakers: dict[str, list[tuple[float, float]]] = {}
    queues: dict[str, list[tuple[float, float]]] = {}
    oldest: dict[str, list[tuple[float, float]]] = {"oldest unknown (min)": []}
    for sample in history:
        for name, state in sample.get("breakers", {}).items():
            breakers.setdefault(name, []).append((sample["t"], STATE_LEVEL.get(state, 0)))
        for name, depth in sample.get("queues", {}).items():
            queues.setdefault(name, []).append((sample["t"], float(depth)))
        age = sample.get("oldest_unknown_s")
        oldest["oldest unknown (min)"].append((sample["t"], (age or 0) / 60))
    return {
        "payments": svg("Payments per minute, last hour", payments_per_minute()),
        "breakers": svg("Breaker state (0 closed, 1 half-open, 2 open)", breakers, steps=True),
        "queues": svg("Queue depth", queues),
        "oldest": svg("Age of the oldest unknown payment", oldest),
    }


def svg(
    title: str,
    series: dict[str, list[tuple[float, float]]],
    *,
    x_labels: tuple[str, str] | None = None,
    marks: list[tuple[float, str]] | None = None,
    empty: str = "no data yet",
    steps: bool = False,
    x_range: tuple[float, float] | None = None,
) -> Markup:
    """A small line chart: one polyline per series, axes with the max and the span.

    `x_labels`: the left and right ends of the time axis (default: "-N min" and "now");
    `marks`: vertical lines at times on the same axis, labelled (a drill's phases);
    `steps`: a value holds until the next sample (a state, not a measure);
    `x_range`: the times at the axis' ends (charts drawn side by side share them)."""
    points = [p for values in series.values() for p in values]
    tall = HEIGHT + 26 + 14 * max(1, -(-len(series) // LEGEND_COLUMNS))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {WIDTH} {tall}" width="{WIDTH}" height="{tall}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{PAD}" y="14" font-size="12" fill="#333">{escape(title)}</text>',
    ]
    if not points:
        parts.append(f'<text x="{PAD}" y="60" font-size="11" fill="#888">{escape(empty)}</text>')
        return Markup("".join(parts) + "</svg>")
    t0, t1 = x_range or (min(p[0] for p in points), max(p[0] for p in points))
    top, top_label = _axis_top(max(p[1] for p in points))
    span = max(t1 - t0, 1.0)
    ago = f"-{span:.0f} s" if span < 120 else f"-{span / 60:.0f} min"
    left, right = x_labels or (ago, "now")

    def x_of(t: float) -> float:
        return PAD + (t - t0) / span * (WIDTH - 2 * PAD)

    def xy(t: float, v: float) -> str:
        return f"{x_of(t):.1f},{20 + HEIGHT - 20 - v / top * (HEIGHT - 30):.1f}"

    parts.append(
        f'<line x1="{PAD}" y1="{HEIGHT}" x2="{WIDTH - PAD}" y2="{HEIGHT}" stroke="#999"/>'
        f'<text x="2" y="30" font-size="10" fill="#666">{top_label}</text>'
        f'<text x="{PAD}" y="{HEIGHT + 12}" font-size="10" fill="#666">{escape(left)}</text>'
        f'<text x="{WIDTH - PAD}" y="{HEIGHT + 12}" font-size="10" fill="#666" '
        f'text-anchor="end">{escape(right)}</text>'
    )
    for index, (at, label) in enumerate(marks or []):
        if t0 <= at <= t1:
            x = x_of(at)
            parts.append(  # labels on three staggered rows, so close marks stay legible
                f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{HEIGHT}" stroke="#bbb" '
                f'stroke-dasharray="3,3"/><text x="{x + 2:.1f}" y="{28 + index % 3 * 10}" '
                f'font-size="9" fill="#777">{escape(label)}</text>'
            )
    others = iter(COLORS * (1 + len(series) // len(COLORS)))
    for index, (name, values) in enumerate(sorted(series.items())):
        color = MEANING.get(name) or next(others)
        held = [(t, values[i - 1][1]) for i, (t, _) in enumerate(values) if i] if steps else []
        line = " ".join(xy(t, v) for t, v in sorted([*held, *values], key=lambda p: p[0]))
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{line}"/>')
        parts.append(
            f'<text x="{PAD + index % LEGEND_COLUMNS * 130}" '
            f'y="{HEIGHT + 30 + index // LEGEND_COLUMNS * 14}" font-size="11" fill="{color}">'
            f"{escape(name.replace('_', ' '))}</text>"  # "needs review", as people write it
        )
    return Markup("".join(parts) + "</svg>")


def _axis_top(highest: float) -> tuple[float, str]:
    """The axis' top and its label: a whole number for counts (never "5.7231"),
    a tenth for a measure below ten."""
    if highest <= 1:
        return 1.0, "1"
    if highest >= 10 or float(highest).is_integer():
        top = float(math.ceil(highest))
        return top, f"{top:,.0f}"
    tenths = math.ceil(highest * 10)  # below ten: to a tenth, rounded up
    return tenths / 10, f"{tenths / 10:g}"
