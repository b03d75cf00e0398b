"""The alert job a provider worker queues at once: one alert and one email per key,
however often it runs."""

from __future__ import annotations

from flask import Flask
from sqlalchemy import func, select

from extensions import db
from jobs.alerts import raise_alert_job
from models import Alert, EmailKind, OutboxMessage


def test_an_alert_is_raised_once_per_key(app_ctx: Flask) -> None:
    assert raise_alert_job("provider_key", "key:stripe:1", "stripe answered 401")
    assert not raise_alert_job("provider_key", "key:stripe:1", "stripe answered 401")
    assert raise_alert_job("invalid_request", "invalid_request:stripe:x", "refused")
    assert db.session.scalar(select(func.count()).select_from(Alert)) == 2
    emails = db.session.scalars(
        select(OutboxMessage).where(OutboxMessage.kind == EmailKind.OPS_ALERT)
    ).all()
    assert len(emails) == 2
