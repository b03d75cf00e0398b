"""Alerts to the on-call admins: each condition is one email however often it is seen,
a new episode is another; they go out on the notifications worker."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import Alert, AlertKind, EmailKind, OutboxMessage, PaymentStatus
from services.backoffice import alerts
from services.platform.provider_clients import breaker_for
from tests.admin_support import force_open
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import override_settings, run_notification_jobs


def _alerts(app: Flask) -> list[tuple[AlertKind, str]]:
    with app.app_context():
        return [(a.kind, a.detail) for a in db.session.scalars(select(Alert).order_by(Alert.id))]


def _alert_emails(app: Flask) -> int:
    with app.app_context():
        return len(
            db.session.scalars(
                select(OutboxMessage.id).where(OutboxMessage.kind == EmailKind.OPS_ALERT)
            ).all()
        )


def test_a_forced_open_breaker_sends_one_alert_email(
    app: Flask, admin_client: FlaskClient, mail_sink: Any
) -> None:
    assert force_open(admin_client, "incident 7") == 302
    with app.app_context():
        assert alerts.check() == 0 and alerts.check() == 0  # seen again: nothing new
    [(kind, detail)] = _alerts(app)
    assert kind == AlertKind.BREAKER_FORCED and "incident 7" in detail
    run_notification_jobs(app)
    [message] = [m for m in mail_sink.messages() if "alert" in m["Subject"]]
    assert message["To"] == app.config["ADMIN_ALERT_EMAIL"]
    body = message.get_body(("plain",)).get_content()
    assert "forced open" in body and "incident 7" in body and "/admin/" in body


def test_each_opening_of_a_breaker_is_one_alert(app: Flask) -> None:
    with app.app_context():
        breaker = breaker_for("braintree")
        for _ in range(int(breaker.config.failure_threshold)):
            breaker.record(is_failure=True, duration_s=0.01)
        assert alerts.check() == 1
        assert alerts.check() == 0
        breaker.force("reset", actor="ops", reason="it is back")
        for _ in range(int(breaker.config.failure_threshold)):
            breaker.record(is_failure=True, duration_s=0.01)
        assert alerts.check() == 1  # it opened again: a new episode
    opened = [k for k, _ in _alerts(app) if k == AlertKind.BREAKER_OPEN]
    assert len(opened) == 2 and _alert_emails(app) == 2


def test_an_outage_is_one_alert_however_often_its_probe_reopens_it(app: Flask) -> None:
    """Reopenings by a failed probe are the same outage (one alert, not one a minute),
    and the alert says what failed, not "0 of 0 recent calls"."""
    import time

    from resilience.breaker import CircuitBreaker

    now_ms = [int(time.time() * 1000)]
    with app.app_context():
        shared = breaker_for("braintree")
        breaker = CircuitBreaker(
            shared.redis, "braintree", shared.config, clock_ms=lambda: now_ms[0]
        )
        for _ in range(int(breaker.config.failure_threshold)):
            breaker.record(is_failure=True, duration_s=0.01, what="charge: Unknown (read timeout)")
        assert alerts.check() == 1
        for _ in range(3):  # each probe fails: open again, for longer
            now_ms[0] += int(breaker.config.open_max_s * 1000) + 1
            probe = breaker.allow()
            assert probe.token is not None
            breaker.record(
                is_failure=True, duration_s=0.01, token=probe.token, what="lookup: Unknown"
            )
            assert alerts.check() == 0
    [(kind, detail)] = _alerts(app)
    assert kind == AlertKind.BREAKER_OPEN
    assert "consecutive failures" in detail and "charge: Unknown (read timeout)" in detail


def test_a_refused_key_is_alerted(app: Flask) -> None:
    with app.app_context():
        breaker_for("stripe").note_authentication_failed(401)
        assert alerts.check() == 1 and alerts.check() == 0
    [(kind, detail)] = _alerts(app)
    assert kind == AlertKind.PROVIDER_KEY and "401" in detail


def test_unknown_payments_past_the_count_are_alerted_once_an_hour(
    app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    override_settings(monkeypatch, app, ALERT_UNKNOWN_COUNT=2)
    with app.app_context():
        first = make_payment(make_order(make_customer()))
        first.status = PaymentStatus.UNKNOWN
        db.session.commit()
        assert alerts.check() == 0  # one is not a pile
        second = make_payment(make_order(make_customer()))
        second.status = PaymentStatus.UNKNOWN
        db.session.commit()
        assert alerts.check() == 1 and alerts.check() == 0
    [(kind, detail)] = _alerts(app)
    assert kind == AlertKind.UNKNOWN_PAYMENTS and detail.startswith("2 payments are unknown")
