"""Pictures for the overview, drawn from our own data as inline SVG (no script, no CDN):
payments per minute by outcome over the last hour, each breaker's state, each queue's
depth and the age of the oldest unknown payment over time.

The last three need history: a periodic job samples them into a Redis list (the last
hour at SWEEP_INTERVAL_S); the first is read from the transitions of the last hour (an
index on their time, so history never slows it)."""

from __future__ import annotations

import json
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
COLORS = ["#2e7d32", "#c62828", "#1565c0", "#ef6c00", "#6a1b9a", "#00838f"]
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
            PaymentTransition.to_status.in_(
                [PaymentStatus.SUCCEEDED, PaymentStatus.FAILED, PaymentStatus.NEEDS_REVIEW]
            ),
        )
    ).all()
    start = since.timestamp() // 60 * 60
    series: dict[str, list[tuple[float, float]]] = {}
    for status in (PaymentStatus.SUCCEEDED, PaymentStatus.FAILED, PaymentStatus.NEEDS_REVIEW):
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
        "breakers": svg("Breaker state (0 closed, 1 half-open, 2 open)", breakers),
        "queues": svg("Queue depth", queues),
        "oldest": svg("Age of the oldest unknown payment", oldest),
    }


def svg(title: str, series: dict[str, list[tuple[float, float]]]) -> Markup:
    """A small line chart: one polyline per series, axes with the max and the span."""
    points = [p for values in series.values() for p in values]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {WIDTH} {HEIGHT + 40}" width="{WIDTH}" height="{HEIGHT + 40}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{PAD}" y="14" font-size="12" fill="#333">{escape(title)}</text>',
    ]
    if not points:
        parts.append(f'<text x="{PAD}" y="60" font-size="11" fill="#888">no data yet</text>')
        return Markup("".join(parts) + "</svg>")
    t0, t1 = min(p[0] for p in points), max(p[0] for p in points)
    top = max(max(p[1] for p in points), 1.0)
    span = max(t1 - t0, 1.0)

    def xy(t: float, v: float) -> str:
        x = PAD + (t - t0) / span * (WIDTH - 2 * PAD)
        y = 20 + HEIGHT - 20 - v / top * (HEIGHT - 30)
        return f"{x:.1f},{y:.1f}"

    parts.append(
        f'<line x1="{PAD}" y1="{HEIGHT}" x2="{WIDTH - PAD}" y2="{HEIGHT}" stroke="#999"/>'
        f'<text x="2" y="30" font-size="10" fill="#666">{top:g}</text>'
        f'<text x="{PAD}" y="{HEIGHT + 12}" font-size="10" fill="#666">'
        f"-{span / 60:.0f} min</text>"
        f'<text x="{WIDTH - PAD - 20}" y="{HEIGHT + 12}" font-size="10" fill="#666">now</text>'
    )
    for index, (name, values) in enumerate(sorted(series.items())):
        color = COLORS[index % len(COLORS)]
        line = " ".join(xy(t, v) for t, v in values)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{line}"/>')
        parts.append(
            f'<text x="{PAD + index * 130}" y="{HEIGHT + 30}" font-size="11" fill="{color}">'
            f"{escape(name)}</text>"
        )
    return Markup("".join(parts) + "</svg>")
