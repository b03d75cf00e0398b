"""Constraints live in the database: these inserts must be refused by it, not by Python."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from flask import Flask
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import LedgerEntry, LedgerKind, Payment, PaymentStatus, ProcessedWebhook
from models.money import InvalidAmountError, validate_money
from models.types import parse_uuid
from services.platform.locales import money_text
from services.wallet import ledger
from tests.factories import make_customer, make_order, make_payment, make_wallet


def test_idempotency_key_is_unique(app_ctx: Flask) -> None:
    customer = make_customer()
    key = uuid.uuid4()
    make_payment(make_order(customer), key=key)
    db.session.commit()
    with pytest.raises(IntegrityError, match="uq_payments_idempotency_key"):
        make_payment(make_order(customer), key=key)
    db.session.rollback()
    assert db.session.query(Payment).count() == 1


def test_provider_payment_id_is_unique_per_provider(app_ctx: Flask) -> None:
    customer = make_customer()
    first, second = make_payment(make_order(customer)), make_payment(make_order(customer))
    first.provider_payment_id = "pi_1"
    db.session.flush()
    second.provider_payment_id = "pi_1"
    with pytest.raises(IntegrityError):
        db.session.flush()
    db.session.rollback()


def test_wallet_balance_cannot_go_negative(app_ctx: Flask) -> None:
    wallet = make_wallet(make_customer())
    db.session.commit()
    with pytest.raises(IntegrityError, match="balance_non_negative"):
        db.session.execute(
            text("UPDATE wallets SET balance_minor = -1 WHERE id = :id"), {"id": wallet.id}
        )
    db.session.rollback()


def test_ledger_operation_id_is_unique(app_ctx: Flask) -> None:
    wallet = make_wallet(make_customer())
    for _ in range(2):
        db.session.add(
            LedgerEntry(
                wallet_id=wallet.id,
                operation_id="op-1",
                amount_minor=5,
                kind=LedgerKind.ADJUSTMENT,
                balance_after_minor=5,
            )
        )
    with pytest.raises(IntegrityError, match="operation_id"):
        db.session.flush()
    db.session.rollback()


def test_webhook_event_is_unique_per_provider(app_ctx: Flask) -> None:
    def event(provider: str) -> ProcessedWebhook:
        return ProcessedWebhook(provider=provider, event_id="evt_1", event_type="x", payload={})

    db.session.add_all([event("stripe"), event("braintree")])
    db.session.flush()  # the same id from another provider is a different event
    db.session.add(event("stripe"))
    with pytest.raises(IntegrityError):
        db.session.flush()
    db.session.rollback()


def test_one_active_payment_per_order(app_ctx: Flask) -> None:
    order = make_order(make_customer())
    first = make_payment(order)
    db.session.commit()
    with pytest.raises(IntegrityError, match="uq_payments_active_order"):
        make_payment(order)
    db.session.rollback()
    first.status = PaymentStatus.FAILED  # a failed attempt leaves room for a new one
    db.session.commit()
    make_payment(order)
    db.session.commit()


def test_status_is_checked_by_the_database(app_ctx: Flask) -> None:
    payment = make_payment(make_order(make_customer()))
    db.session.commit()
    with pytest.raises(IntegrityError):
        db.session.execute(
            text("UPDATE payments SET status = 'refunded' WHERE id = :id"), {"id": payment.id}
        )
    db.session.rollback()


def test_purpose_needs_its_target(app_ctx: Flask) -> None:
    customer = make_customer()
    db.session.add(
        Payment(
            idempotency_key=uuid.uuid4(),
            customer_id=customer.id,
            purpose="order",
            order_id=None,
            provider="stripe",
            amount_minor=100,
            currency="EUR",
        )
    )
    with pytest.raises(IntegrityError, match="purpose_target"):
        db.session.flush()
    db.session.rollback()


def test_timestamps_come_back_timezone_aware(app_ctx: Flask) -> None:
    payment = make_payment(make_order(make_customer()))
    db.session.commit()
    db.session.expire_all()
    reloaded = db.session.get(Payment, payment.id)
    assert reloaded is not None
    assert reloaded.created_at.tzinfo is not None
    assert reloaded.status is PaymentStatus.PENDING
    assert abs((datetime.now(UTC) - reloaded.created_at).total_seconds()) < 60


@pytest.mark.parametrize(
    ("amount", "currency", "message"),
    [
        (0, "EUR", "must be positive"),
        (-5, "EUR", "must be positive"),
        (10_000_001, "EUR", "at most"),
        (1.5, "EUR", "integer"),
        (True, "EUR", "integer"),
        ("100", "EUR", "integer"),
        (100, "XXX", "ISO 4217"),
        (100, "JPY", "one of"),
        (100, None, "ISO 4217"),
    ],
)
def test_invalid_money_is_refused_with_the_rule(
    amount: object, currency: object, message: str
) -> None:
    with pytest.raises(InvalidAmountError, match=message):
        validate_money(amount, currency, max_minor=10_000_000, allowed=["EUR", "USD"])


def test_valid_money_is_normalised() -> None:
    assert validate_money(100, "eur", max_minor=1000, allowed=["EUR"]) == (100, "EUR")


@pytest.mark.parametrize(
    ("amount", "currency", "shown"),
    [
        (1250, "EUR", "€12.50"),
        (5, "USD", "$0.05"),
        (123456, "EUR", "€1,234.56"),
        (-300, "GBP", "-£3.00"),
        (500, "JPY", "¥500"),
    ],
)
def test_money_is_formatted_at_the_edge(amount: int, currency: str, shown: str) -> None:
    assert money_text(amount, currency) == shown  # outside a request: English


@pytest.mark.parametrize(
    ("sql", "constraint"),
    [
        (
            "INSERT INTO processed_webhooks (provider, event_id, event_type, state, note, "
            "payload, received_at) VALUES ('stripe', 'evt_x', 't', 'bogus', '', '{}', "
            "CURRENT_TIMESTAMP)",
            "webhook_state",
        ),
        (
            "UPDATE ledger_entries SET kind = 'bogus'",
            "ledger_kind",
        ),
    ],
)
def test_state_names_are_checked_by_the_database(
    app_ctx: Flask, owner_engine: Engine, sql: str, constraint: str
) -> None:
    """Every state name comes from its enum, in Python and in the schema's CHECKs (asked
    as the owner: the app's role may not even update a ledger entry)."""
    customer = make_customer()
    target = make_wallet(customer)
    db.session.commit()
    ledger.credit(target, 5, "op-check")  # a ledger entry (with its posting) to update
    db.session.commit()
    with pytest.raises(IntegrityError, match=constraint), owner_engine.begin() as conn:
        conn.execute(text(sql))


@pytest.mark.parametrize(
    "text",
    [
        "0x" + "a" * 32,
        "+" + "a" * 32,
        "a" * 32,  # no hyphens
        "{12345678-1234-1234-1234-123456789abc}",
        "urn:uuid:12345678-1234-1234-1234-123456789abc",
        "1234-5678-1234-1234-1234-123456789abc",  # hyphens elsewhere
        "12345678-1234-1234-1234-123456789abg",
        "\uff11\uff12345678-1234-1234-1234-123456789abc",  # full-width digits
        "",
    ],
)
def test_only_canonical_uuids_are_keys(text: str) -> None:
    with pytest.raises(ValueError, match="canonical"):
        parse_uuid(text)


def test_a_canonical_uuid_in_either_case_is_one_key() -> None:
    lower = parse_uuid(" 12345678-1234-1234-1234-123456789abc ")
    assert lower == parse_uuid("12345678-1234-1234-1234-123456789ABC")
