"""The overview's pictures: outcomes per minute from the last hour's transitions, and the
sampled breakers, queues and oldest unknown payment, drawn as inline SVG."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from extensions import db
from models import PaymentStatus, TransitionSource
from models.types import utcnow
from services.backoffice.charts import _axis_top, payments_per_minute, samples, svg
from services.backoffice.dashboard import sample_health
from services.movements.locks import lock_payment
from services.payments.state import move
from services.platform.provider_clients import breaker_for
from tests.factories import make_customer, make_order, make_payment


def test_outcomes_per_minute_come_from_the_last_hour(app_ctx: Flask) -> None:
    for target in (PaymentStatus.SUCCEEDED, PaymentStatus.SUCCEEDED, PaymentStatus.FAILED):
        payment = make_payment(make_order(make_customer()))
        db.session.commit()
        locked = lock_payment(payment.id)
        assert locked is not None
        move(locked, target, source=TransitionSource.CHARGE, reason="test")
        db.session.commit()
    series = payments_per_minute()
    assert sum(v for _, v in series["succeeded"]) == 2 and sum(v for _, v in series["failed"]) == 1
    assert sum(v for _, v in payments_per_minute(utcnow() + timedelta(hours=2))["succeeded"]) == 0


def test_samples_feed_the_charts(app_ctx: Flask) -> None:
    breaker_for("stripe").force("open", actor="test", reason="chart")
    sample_health()
    sample_health()
    [first, _] = samples()
    assert first["breakers"]["stripe"] == "forced_open" and "notifications" in first["queues"]


def test_svg_draws_one_line_per_series_and_escapes_names() -> None:
    drawn = str(svg("Depth <q>", {"a<b": [(0.0, 1.0), (60.0, 3.0)], "c": [(0.0, 0.0)]}))
    assert drawn.startswith("<svg") and drawn.count("<polyline") == 2
    assert "a&lt;b" in drawn and "Depth &lt;q&gt;" in drawn and "style=" not in drawn
    assert "no data yet" in str(svg("empty", {}))


def test_the_overview_shows_the_charts(admin_client: FlaskClient, app: Flask, sandbox: Any) -> None:
    with app.app_context():
        sample_health()
    page = admin_client.get("/admin/").get_data(as_text=True)
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == 4


def test_a_state_holds_until_the_next_sample() -> None:
    drawn = str(svg("Breaker", {"stripe": [(0.0, 0.0), (10.0, 2.0)]}, steps=True))
    points = drawn.split('points="')[1].split('"')[0].split()
    assert len(points) == 3  # closed until the sample that saw it open, then open
    assert points[1].split(",")[1] == points[0].split(",")[1]  # level: still closed at t=10
    assert points[1].split(",")[0] == points[2].split(",")[0]  # then straight up
    assert ">-10 s<" in drawn  # a short span is told in seconds


def test_colours_follow_meaning_and_the_unknown_line_is_drawn(app_ctx: Flask) -> None:
    series = payments_per_minute()
    assert set(series) == {"succeeded", "failed", "unknown", "needs_review"}
    drawn = str(svg("Payments", series))
    # Sorted by name, "failed" is drawn first: it was given the first colour, green.
    assert 'fill="#c62828">failed<' in drawn and 'fill="#2e7d32">succeeded<' in drawn
    assert 'fill="#6a1b9a">unknown<' in drawn


def test_axes_read_as_whole_numbers_for_counts_and_short_numbers_for_measures() -> None:
    assert _axis_top(3.0) == (3.0, "3") and _axis_top(0.0) == (1.0, "1")
    assert _axis_top(5.7231) == (5.8, "5.8")  # the reported "5.7231"
    assert _axis_top(57.231) == (58.0, "58") and _axis_top(12_345.6)[1] == "12,346"
    drawn = str(svg("Age", {"oldest unknown (min)": [(0.0, 0.0), (60.0, 5.7231)]}))
    assert ">5.8<" in drawn and "5.7231" not in drawn
