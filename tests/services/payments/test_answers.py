"""Provider reports move money only when they match the payment (amount, currency, our
reference, the provider id once known); a mismatch sends the payment to review."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import (
    LedgerEntry,
    Order,
    OrderStatus,
    Payment,
    PaymentStatus,
    PaymentTransition,
)
from providers.outcomes import Report
from services.backoffice.dashboard import webhook_stats
from services.payments.answers import mismatch
from services.platform import metrics
from tests.helpers import (
    charge_payment,
    committed_payment,
    committed_topup,
    got,
    last_state,
    payment,
    reconcile_payment,
    signed_post,
    stripe_event,
    wallet_balance,
)


def _last_reason(app: Flask, payment_id: int) -> str:
    with app.app_context():
        reason = db.session.scalars(
            select(PaymentTransition.reason)
            .where(PaymentTransition.payment_id == payment_id)
            .order_by(PaymentTransition.id.desc())
        ).first()
    return reason or ""


def _mismatches(provider: str, source: str) -> float:
    return metrics.REPORT_MISMATCHES.labels(provider, source)._value.get()


def test_a_signed_webhook_for_another_amount_never_credits_a_topup(
    app: Flask, client: FlaskClient
) -> None:
    """The reported hole: amount 1 USD, a foreign pi_, our payment_id: applied as 500000 EUR."""
    payment_id = committed_topup(app, 500000)
    before = _mismatches("stripe", "webhook")
    event = stripe_event(payment_id, intent_id="pi_foreign", amount=1, currency="usd")
    assert signed_post(client, event).status_code == 200
    assert last_state(app) == "applied"
    seen = payment(app, payment_id)
    assert seen.status == PaymentStatus.NEEDS_REVIEW
    assert seen.provider_payment_id is None  # not overwritten by the report
    assert wallet_balance(app, payment_id) == 0
    reason = _last_reason(app, payment_id)
    assert "amount $0.01, ours is €5,000.00" in reason and "currency 'USD', ours is 'EUR'" in reason
    assert _mismatches("stripe", "webhook") == before + 1
    with app.app_context():
        assert webhook_stats()["report_mismatches_today"] >= 1


def test_a_webhook_naming_another_provider_payment_goes_to_review(
    app: Flask, client: FlaskClient
) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        got(Payment, payment_id).provider_payment_id = "pi_ours"
        db.session.commit()
    signed_post(client, stripe_event(payment_id, intent_id="pi_theirs"))
    last_state(app)
    assert payment(app, payment_id).status == PaymentStatus.NEEDS_REVIEW
    assert payment(app, payment_id).provider_payment_id == "pi_ours"
    assert "provider payment 'pi_theirs', ours is 'pi_ours'" in _last_reason(app, payment_id)


def test_a_matching_webhook_still_succeeds_the_payment(app: Flask, client: FlaskClient) -> None:
    payment_id = committed_topup(app, amount_minor=700)
    signed_post(client, stripe_event(payment_id, intent_id="pi_ok", amount=700, currency="eur"))
    last_state(app)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert wallet_balance(app, payment_id) == 700


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("amount", 1, "amount €0.01, ours is €10.00"),
        ("currency", "usd", "currency 'USD', ours is 'EUR'"),
        ("metadata.payment_id", "424242", "payment_id '424242'"),
        # A success must say what it charged: what it leaves out cannot be checked.
        ("amount", None, "no amount"),
        ("currency", None, "no currency"),
    ],
)
def test_a_tampered_charge_answer_sends_the_payment_to_review(
    app: Flask, sandbox: Any, field: str, value: Any, expected: str
) -> None:
    sandbox.add_fault("tamper", field=field, value=value, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    before = _mismatches("stripe", "charge")
    with app.app_context():
        charge_payment(payment_id)
        order = db.session.get(Order, db.session.get(Payment, payment_id).order_id)  # type: ignore[union-attr]  # the payment exists (made above)
        assert order is not None and order.status == OrderStatus.OPEN  # nothing was paid
    assert payment(app, payment_id).status == PaymentStatus.NEEDS_REVIEW
    assert expected in _last_reason(app, payment_id)
    assert _mismatches("stripe", "charge") == before + 1


def test_a_tampered_lookup_answer_never_credits(app: Flask, sandbox: Any) -> None:
    """Reconciliation asks again (replay, retrieve, search): each answer is checked too."""
    payment_id = committed_topup(app, amount_minor=900)
    sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    with app.app_context():
        charge_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    sandbox.clear_faults()
    sandbox.add_fault("tamper", field="amount", value=9, dialect="stripe")
    with app.app_context():
        reconcile_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.NEEDS_REVIEW
    assert wallet_balance(app, payment_id) == 0
    with app.app_context():
        assert db.session.scalar(select(LedgerEntry.id)) is None


def test_braintrees_answer_must_echo_our_reference(app: Flask, sandbox: Any) -> None:
    sandbox.add_fault("tamper", field="reference", value=str(uuid.uuid4()), dialect="braintree")
    payment_id = committed_topup(app, amount_minor=1200, provider="braintree")
    with app.app_context():
        charge_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.NEEDS_REVIEW
    assert "reference " in _last_reason(app, payment_id)
    assert wallet_balance(app, payment_id) == 0


def _payment(**fields: Any) -> Payment:
    defaults: dict[str, Any] = {
        "id": 7,
        "idempotency_key": uuid.UUID("00000000-0000-4000-8000-000000000007"),
        "amount_minor": 1000,
        "currency": "EUR",
        "provider_payment_id": None,
    }
    return Payment(**{**defaults, **fields})


KEY = "00000000-0000-4000-8000-000000000007"


@pytest.mark.parametrize(
    ("ours", "provider_id", "report", "is_success", "problem"),
    [
        ({}, "pi_1", Report(1000, "EUR", "7"), True, None),
        ({}, "pi_1", Report(1000, "EUR", reference=KEY), True, None),
        ({}, "pi_1", Report(1000, "eur".upper(), "7"), True, None),
        ({}, "pi_1", Report(None, "EUR", "7"), True, "no amount"),
        ({}, "pi_1", Report(1000, None, "7"), True, "no currency"),
        ({}, "pi_1", Report(1000, "EUR"), True, "nothing in it names this payment"),
        ({"provider_payment_id": "pi_1"}, "pi_1", Report(1000, "EUR"), True, None),
        ({"provider_payment_id": "pi_1"}, "pi_2", Report(1000, "EUR", "7"), True, "'pi_2'"),
        ({}, "pi_1", Report(1000, "EUR", "8"), True, "payment_id '8'"),
        ({}, "pi_1", Report(1000, "EUR", reference="other"), True, "reference 'other'"),
        ({}, "pi_1", Report(999, "EUR", "7"), True, "amount €9.99, ours is €10.00"),
        ({}, "pi_1", Report(1000, "EUR", "7", received_minor=1), True, "amount received €0.01"),
        # A failure is checked on what it says: silence is no contradiction.
        ({}, "pi_1", Report(), False, None),
        ({}, "pi_1", Report(5, None, None), False, "amount €0.05"),
    ],
)
def test_mismatch_table(
    app_ctx: Flask,
    ours: dict[str, Any],
    provider_id: str,
    report: Report,
    is_success: bool,
    problem: str | None,
) -> None:
    found = mismatch(_payment(**ours), provider_id, report, is_success=is_success)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_report_values_of_the_wrong_type_count_as_unsaid() -> None:
    assert Report.of(True, 5, 7, None, "9") == Report(None, None, None, None, None)
    assert Report.of(10, "eur", "7", "k", 10) == Report(10, "EUR", "7", "k", 10)
