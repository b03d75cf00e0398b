"""Card testing: declines counted per customer, address and card; past a limit new
payments are refused with 429 and Retry-After, counted in /metrics and alerted once."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from prometheus_client import REGISTRY
from sqlalchemy import select

from extensions import db
from models import Alert, AlertKind, Payment, PaymentStatus
from services.payments.answers import CARD_REFUSED
from tests.helpers import (
    api_customer,
    api_order,
    api_pay,
    override_settings,
    run_jobs,
    run_maintenance_jobs,
)

DECLINED = "pm_card_chargeDeclined"


def _trips(scope: str) -> float:
    return REGISTRY.get_sample_value("card_testing_trips_total", {"scope": scope}) or 0.0


def _declined(client: FlaskClient, app: Flask, headers: dict[str, str], card: str) -> Any:
    """One order paid with `card`, its charge job run: the payment's answer."""
    order = api_order(client, headers)
    created = api_pay(client, headers, order["id"], payment_method=card)
    if created.status_code == 201:
        run_jobs(app)
    return created


def test_twenty_declines_in_a_minute_from_one_customer_get_429(
    app: Flask, client: FlaskClient, api: dict[str, str], sandbox: Any, monkeypatch: Any
) -> None:
    # Many cards (a tester's list): the customer's limit binds, not a card's.
    override_settings(monkeypatch, app, CARD_TESTING_MAX_DECLINES_PER_CARD=100)
    limit = app.config["CARD_TESTING_MAX_DECLINES_PER_CUSTOMER"]
    before = _trips("customer")
    answers = []
    cards = [f"pm_card_{name}" for name in ("chargeDeclined", "chargeDeclinedInsufficientFunds")]
    for attempt in range(20):
        answers.append(_declined(client, app, api, cards[attempt % 2]))
    codes = [a.status_code for a in answers]
    assert codes[:limit] == [201] * limit, codes
    assert set(codes[limit:]) == {429}, codes
    refused = answers[-1]
    assert refused.get_json()["error"]["code"] == "too_many_declines"
    retry_after = int(refused.headers["Retry-After"])
    assert 0 < retry_after <= app.config["CARD_TESTING_WINDOW_S"] + 1
    assert "try again in" in refused.get_json()["error"]["message"]
    assert _trips("customer") == before + 1  # one trip, however many refusals
    with app.app_context():
        assert db.session.scalar(select(db.func.count()).select_from(Payment)) == limit
        statuses = set(db.session.scalars(select(Payment.status)))
    assert statuses == {PaymentStatus.FAILED}
    assert len(sandbox.requests_log(endpoint="create")) == limit  # nothing more sent
    run_maintenance_jobs(app)
    with app.app_context():
        alerts = db.session.scalars(select(Alert).where(Alert.kind == AlertKind.CARD_TESTING)).all()
    assert len(alerts) == 1 and "customer" in alerts[0].detail


def test_a_card_that_declines_is_not_tried_again_by_the_same_customer(
    app: Flask, client: FlaskClient, api: dict[str, str], sandbox: Any
) -> None:
    limit = app.config["CARD_TESTING_MAX_DECLINES_PER_CARD"]
    for _ in range(limit):
        assert _declined(client, app, api, DECLINED).status_code == 201
    sent = len(sandbox.requests_log(endpoint="create"))
    again = _declined(client, app, api, DECLINED)  # the same card, once more
    assert again.status_code == 201  # the customer is not blocked (yet) ...
    with app.app_context():
        refused = db.session.get_one(Payment, again.get_json()["id"])
        assert refused.status == PaymentStatus.FAILED and refused.decline_code == CARD_REFUSED
        assert refused.send_count == 0 and refused.first_sent_at is None  # never sent
    assert len(sandbox.requests_log(endpoint="create")) == sent  # ... but the card is
    # Another card of the same customer still goes through.
    order = api_order(client, api)
    assert api_pay(client, api, order["id"], payment_method="pm_card_visa").status_code == 201
    run_jobs(app)
    assert len(sandbox.requests_log(endpoint="create")) == sent + 1
    # And the same card for another customer is that customer's own business.
    _, other = api_customer(app, "other@example.com")
    assert _declined(client, app, other, DECLINED).status_code == 201
    assert len(sandbox.requests_log(endpoint="create")) == sent + 2


def test_declines_from_one_address_block_it_for_every_customer(
    app: Flask, client: FlaskClient, api: dict[str, str], sandbox: Any, monkeypatch: Any
) -> None:
    override_settings(monkeypatch, app, CARD_TESTING_MAX_DECLINES_PER_ADDRESS=3)
    customers = [api] + [api_customer(app, f"tester{n}@example.com")[1] for n in range(3)]
    answers = [_declined(client, app, headers, DECLINED).status_code for headers in customers]
    assert answers == [201, 201, 201, 429]  # each customer declined once; the address thrice
    fresh = api_customer(app, "fresh@example.com")[1]
    order = api_order(client, fresh)
    refused = api_pay(client, fresh, order["id"], payment_method="pm_card_visa")
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
