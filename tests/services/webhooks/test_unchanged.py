"""The batch's events that change nothing: marked in two statements, exactly as the
careful path (apply_event, one event at a time under its row locks) would mark them;
every other event left to the careful path."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event, func, select

from extensions import db
from models import Payment, PaymentStatus, PaymentTransition, ProcessedWebhook, WebhookState
from providers.registry import PROVIDERS
from services.webhooks import batches
from services.webhooks.events import apply_recorded, ingest
from services.webhooks.unchanged import mark_unchanged
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import got, stripe_event

SUCCEEDED, FAILED, PENDING = PaymentStatus.SUCCEEDED, PaymentStatus.FAILED, PaymentStatus.PENDING
Event = tuple[str, dict[str, Any]]  # (provider, payload)


def _payment(app: Flask, provider: str = "stripe", **fields: Any) -> tuple[int, str, str]:
    """A committed order payment (1000 EUR) with `fields`; (id, key, provider id)."""
    with app.app_context():
        created = make_payment(make_order(make_customer()), provider=provider)
        theirs = _their_id()
        fields.setdefault("provider_payment_id", theirs)
        for key, value in fields.items():
            setattr(created, key, value)
        db.session.commit()
        return created.id, str(created.idempotency_key), theirs


def _their_id() -> str:
    return f"pi_{uuid.uuid4().hex[:12]}"  # each scenario runs twice in one database


def _succeeded(payment_id: int | None, theirs: str, **extra: Any) -> Event:
    return "stripe", stripe_event(payment_id, intent_id=theirs, **extra)


def _stripe_failed(payment_id: int, theirs: str, decline: str) -> Event:
    payload = stripe_event(
        payment_id,
        "payment_intent.payment_failed",
        intent_id=theirs,
        status="requires_payment_method",
        last_payment_error={"decline_code": decline},
    )
    return "stripe", payload


def _braintree_settled(key: str, theirs: str) -> Event:
    """Braintree's notification of a sale settled, as the endpoint loads it (our key as
    the sale's order_id; 10.00 EUR, the payment's amount)."""
    sale = {"id": theirs, "type": "sale", "status": "settled", "order_id": key}
    subject = {"transaction": {**sale, "amount": "10.00", "currency_iso_code": "EUR"}}
    at = datetime.now(UTC).isoformat()
    notification = {"kind": "transaction_settled", "timestamp": at, "subject": subject}
    return "braintree", {"notification": notification}


def settled(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=SUCCEEDED)
    return [_succeeded(payment_id, theirs)]


def settled_named_by_their_id_only(app: Flask) -> list[Event]:
    _, _, theirs = _payment(app, status=SUCCEEDED)
    return [_succeeded(None, theirs)]


def settled_amount_differs(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=SUCCEEDED)
    return [_succeeded(payment_id, theirs, amount=999)]


def settled_currency_differs(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=SUCCEEDED)
    return [_succeeded(payment_id, theirs, currency="usd")]


def settled_another_provider_id(app: Flask) -> list[Event]:
    payment_id, _, _ = _payment(app, status=SUCCEEDED)
    return [_succeeded(payment_id, _their_id())]


def settled_provider_id_not_stored(app: Flask) -> list[Event]:
    payment_id, _, _ = _payment(app, status=SUCCEEDED, provider_payment_id=None)
    return [_succeeded(payment_id, _their_id())]


def still_pending(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=PENDING, provider_payment_id=None)
    return [_succeeded(payment_id, theirs)]


def in_review(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=PaymentStatus.NEEDS_REVIEW)
    return [_succeeded(payment_id, theirs)]


def failed_decline_known(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=FAILED, decline_code="card_declined")
    return [_stripe_failed(payment_id, theirs, "card_declined")]


def failed_decline_not_stored(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=FAILED)
    return [_stripe_failed(payment_id, theirs, "insufficient_funds")]


def failed_but_succeeded_says_the_event(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=FAILED, decline_code="card_declined")
    return [_succeeded(payment_id, theirs)]


def two_events_for_one_payment(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=SUCCEEDED)
    earlier = int(time.time()) - 60
    return [_succeeded(payment_id, theirs), _succeeded(payment_id, theirs, created=earlier)]


def older_than_the_one_applied(app: Flask, seconds_before: int = 60) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=SUCCEEDED)
    applied_at = int(time.time())
    with app.app_context():
        applied = ProcessedWebhook(
            provider="stripe",
            event_id=f"evt_applied_{payment_id}",
            event_type="payment_intent.succeeded",
            payload={},
            state=WebhookState.APPLIED,
            payment_id=payment_id,
            event_created_at=datetime.fromtimestamp(applied_at, UTC),
        )
        db.session.add(applied)
        db.session.commit()
    return [_succeeded(payment_id, theirs, created=applied_at - seconds_before)]


def not_ours(app: Flask) -> list[Event]:
    return [_succeeded(2_000_000_000, _their_id())]


def malformed_payment_ref(app: Flask) -> list[Event]:
    _, _, theirs = _payment(app, status=SUCCEEDED)
    payload = stripe_event(None, intent_id=theirs, metadata={"payment_id": "12x"})
    return [("stripe", payload)]


def another_providers_payment(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, provider="braintree", status=SUCCEEDED)
    return [_succeeded(payment_id, theirs)]


def braintree_by_reference(app: Flask) -> list[Event]:
    _, key, theirs = _payment(app, provider="braintree", status=SUCCEEDED)
    return [_braintree_settled(key, theirs)]


def braintree_reference_not_a_key(app: Flask) -> list[Event]:
    _, _, theirs = _payment(app, provider="braintree", status=SUCCEEDED)
    return [_braintree_settled("not-a-key", theirs)]


def settled_report_without_amount(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=SUCCEEDED)
    return [_succeeded(payment_id, theirs, amount=None)]  # a success must say how much


def named_by_ours_and_by_theirs_differently(app: Flask) -> list[Event]:
    ours, _, _ = _payment(app, status=SUCCEEDED)
    _, _, theirs = _payment(app, status=SUCCEEDED)  # another payment holds that id
    return [_succeeded(ours, theirs)]  # our id first: a mismatch on ours, for review


def braintree_named_by_key_and_by_theirs_differently(app: Flask) -> list[Event]:
    _, key, _ = _payment(app, provider="braintree", status=SUCCEEDED)
    _, _, theirs = _payment(app, provider="braintree", status=SUCCEEDED)
    return [_braintree_settled(key, theirs)]


def two_events_for_one_payment_then_a_settled_one(app: Flask) -> list[Event]:
    return [*two_events_for_one_payment(app), *settled(app)]


def as_new_as_the_one_applied(app: Flask) -> list[Event]:
    return older_than_the_one_applied(app, seconds_before=0)


def no_effect_on_payments(app: Flask) -> list[Event]:
    payment_id, _, theirs = _payment(app, status=SUCCEEDED)
    return [_succeeded(payment_id, theirs, event_type="customer.created")]


# Scenario -> how many of its events change nothing (marked without the careful path).
SCENARIOS: dict[Callable[[Flask], list[Event]], int] = {
    settled: 1,
    settled_named_by_their_id_only: 1,
    failed_decline_known: 1,
    braintree_by_reference: 1,
    as_new_as_the_one_applied: 1,
    two_events_for_one_payment_then_a_settled_one: 1,
    settled_amount_differs: 0,
    settled_currency_differs: 0,
    settled_report_without_amount: 0,
    settled_another_provider_id: 0,
    settled_provider_id_not_stored: 0,
    named_by_ours_and_by_theirs_differently: 0,
    braintree_named_by_key_and_by_theirs_differently: 0,
    still_pending: 0,
    in_review: 0,
    failed_decline_not_stored: 0,
    failed_but_succeeded_says_the_event: 0,
    two_events_for_one_payment: 0,
    older_than_the_one_applied: 0,
    not_ours: 0,
    malformed_payment_ref: 0,
    another_providers_payment: 0,
    braintree_reference_not_a_key: 0,
    no_effect_on_payments: 0,
}


def _record(app: Flask, events: list[Event]) -> list[int]:
    with app.app_context():
        names = []
        for provider, payload in events:
            parsed = PROVIDERS[provider].webhook.parse(json.loads(json.dumps(payload)))
            assert ingest(provider, parsed, payload) == "accepted"
            names.append(parsed.event_id)
        return list(
            db.session.scalars(
                select(ProcessedWebhook.id)
                .where(ProcessedWebhook.event_id.in_(names))
                .order_by(ProcessedWebhook.id)
            )
        )


def _outcome(app: Flask, record_ids: list[int]) -> list[tuple[Any, ...]]:
    """What each event became, and its payment: without ids, to compare two runs."""
    found = []
    with app.app_context():
        for record_id in record_ids:
            record = db.session.get(ProcessedWebhook, record_id)
            assert record is not None
            status = moves = None
            if record.payment_id is not None:
                status = got(Payment, record.payment_id).status
                moves = db.session.scalar(
                    select(func.count()).where(PaymentTransition.payment_id == record.payment_id)
                )
            note = (record.note or "").split(":")[0]
            found.append((record.state, note, record.processed_at is None, status, moves))
    return found


@pytest.mark.parametrize("scenario", list(SCENARIOS), ids=lambda s: s.__name__)
def test_the_batch_marks_each_event_as_the_careful_path_does(
    app: Flask, scenario: Callable[[Flask], list[Event]]
) -> None:
    one_by_one = _record(app, scenario(app))
    for record_id in one_by_one:
        with app.app_context():
            apply_recorded(record_id)
    expected = _outcome(app, one_by_one)

    in_batch = _record(app, scenario(app))
    with app.app_context():
        records = db.session.scalars(
            select(ProcessedWebhook).where(ProcessedWebhook.id.in_(in_batch))
        ).all()
        parsed = [(r, PROVIDERS[r.provider].webhook.parse(r.payload)) for r in records]
        left = mark_unchanged(parsed)
        db.session.commit()
    assert len(parsed) - len(left) == SCENARIOS[scenario]  # marked here; the rest left
    with app.app_context():
        assert batches.apply_batch()[0] == len(left)  # the rest, by the careful path
    assert _outcome(app, in_batch) == expected


def test_a_batch_of_settled_payments_costs_a_few_statements(app: Flask) -> None:
    events = [event for _ in range(20) for event in settled(app)]
    _record(app, events)
    statements: list[str] = []
    with app.app_context():
        engine = db.engine

        def count(*args: Any) -> None:
            statements.append(args[2])

        event.listen(engine, "before_cursor_execute", count)
        try:
            assert batches.apply_batch() == (20, False)
        finally:
            event.remove(engine, "before_cursor_execute", count)
        states = db.session.scalars(select(ProcessedWebhook.note)).all()
    assert states == ["no change: payment was succeeded"] * 20
    assert len(statements) == 3, statements  # claim the events, read the payments, mark
