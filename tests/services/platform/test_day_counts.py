"""Counts per day for the dashboard: counted in Redis, best effort when Redis is down."""

from __future__ import annotations

from typing import Any

from flask import Flask

from devtools.servers import free_port
from services.platform import day_counts


def test_counts_add_up_per_name(app_ctx: Flask) -> None:
    for _ in range(3):
        day_counts.count_today(day_counts.DUPLICATE_WEBHOOKS)
    day_counts.count_today(day_counts.REPORT_MISMATCHES)
    assert day_counts.today_counts(
        day_counts.DUPLICATE_WEBHOOKS, day_counts.REPORT_MISMATCHES, "nothing"
    ) == [3, 1, 0]


def test_without_redis_nothing_is_raised(app: Flask, make_app: Any) -> None:
    with make_app(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0").app_context():
        day_counts.count_today(day_counts.DUPLICATE_WEBHOOKS)
        assert day_counts.today_counts(day_counts.DUPLICATE_WEBHOOKS) is None
