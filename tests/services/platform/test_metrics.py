"""Metrics: counters from every process, live state at scrape time, in-flight requests."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from extensions import db
from models import DisputeStatus
from models.types import utcnow
from tests.factories import make_customer, make_dispute, make_order, make_payment
from tests.helpers import charge_payment


def test_metrics_parse_and_count_a_charge(client: FlaskClient, app: Flask, sandbox: Any) -> None:
    def charges() -> float:
        text = client.get("/metrics").get_data(as_text=True)
        for family in text_string_to_metric_families(text):
            if family.name == "provider_calls":
                return sum(
                    s.value
                    for s in family.samples
                    if s.name == "provider_calls_total"
                    and s.labels == {"provider": "stripe", "call": "charge", "outcome": "Succeeded"}
                )
        return 0.0

    before = charges()
    with app.app_context():
        created = make_payment(make_order(make_customer()))
        db.session.commit()
        charge_payment(created.id)
    assert charges() == before + 1
    families = {
        f.name
        for f in text_string_to_metric_families(client.get("/metrics").get_data(as_text=True))
    }
    assert {"payments", "breaker_state", "webhook_events", "wallet_operations"} <= families


def test_in_flight_gauge_counts_the_scrape_and_leaks_nothing(client: FlaskClient) -> None:
    def in_flight() -> float:
        text = client.get("/metrics").get_data(as_text=True)
        family = next(
            f for f in text_string_to_metric_families(text) if f.name == "http_requests_in_flight"
        )
        return sum(s.value for s in family.samples)

    assert in_flight() == 1  # the scrape itself is being served
    client.get("/")
    client.get("/no-such-page")
    client.post("/login", data={"email": "x"})  # refused by CSRF before any view runs
    assert in_flight() == 1


def test_open_disputes_and_the_soonest_evidence_deadline(client: FlaskClient, app: Flask) -> None:
    """The inputs of DisputeWaitsForEvidence and DisputeEvidenceDueSoon."""

    def scraped() -> dict[str, dict[str, float]]:
        text = client.get("/metrics").get_data(as_text=True)
        return {
            f.name: {s.labels.get("status", ""): s.value for s in f.samples}
            for f in text_string_to_metric_families(text)
            if f.name.startswith("disputes")
        }

    assert scraped()["disputes_evidence_due_seconds"] == {}  # none waits: no sample
    with app.app_context():
        payment = make_payment(make_order(make_customer()))
        soon = utcnow() + timedelta(hours=30)
        make_dispute(payment, DisputeStatus.NEEDS_RESPONSE, evidence_due_by=soon)
        later = make_payment(make_order(make_customer()))
        make_dispute(later, DisputeStatus.NEEDS_RESPONSE, evidence_due_by=soon + timedelta(days=5))
        make_dispute(make_payment(make_order(make_customer())), DisputeStatus.UNDER_REVIEW)
        make_dispute(make_payment(make_order(make_customer())), DisputeStatus.WON)
        db.session.commit()
    families = scraped()
    assert families["disputes"]["needs_response"] == 2
    assert families["disputes"]["under_review"] == 1
    assert "won" not in families["disputes"]  # closed: history, not a gauge
    assert 29 * 3600 < families["disputes_evidence_due_seconds"][""] <= 30 * 3600
