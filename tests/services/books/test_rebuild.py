"""The rebuild check: every wallet's balance and every order's paid, refunded and disputed
amounts, recomputed from the journal's postings alone, equal what the tables say; a
table changed behind the books' back is named."""

from __future__ import annotations

import uuid

import pytest
from flask import Flask
from sqlalchemy import text

from extensions import db
from models import (
    Customer,
    DisputeStatus,
    Order,
    OrderStatus,
    Payment,
    PaymentStatus,
    RefundStatus,
    TransitionSource,
    Wallet,
)
from services.books import rebuild
from services.disputes.state import move_dispute
from services.payments.state import move
from services.payments.wallet_orders import pay_order_from_wallet
from services.refunds.issue import refund_wallet_order
from services.refunds.state import move_refund
from services.wallet import ledger
from tests.factories import (
    make_customer,
    make_dispute,
    make_order,
    make_payment,
    make_refund,
    make_wallet,
)
from tests.helpers import got


def _card_paid(customer: Customer, price_minor: int) -> tuple[Order, Payment]:
    """An order paid by a card payment's success (its one statement, with its entry)."""
    order = make_order(customer, price_minor=price_minor)
    payment = make_payment(order)
    payment.provider_payment_id = f"pi_{payment.id}"
    assert move(payment, PaymentStatus.SUCCEEDED, source=TransitionSource.WEBHOOK)
    return order, payment


def _every_movement(app_ctx: Flask) -> tuple[Wallet, Order, Order, Order]:
    """A wallet credited, debited, paying an order refunded back to it; an order paid by
    card and partly refunded; one paid by card and charged back."""
    customer = make_customer()
    wallet = make_wallet(customer)
    db.session.commit()
    ledger.credit(wallet, 5000, "opening")
    ledger.debit(wallet, 300, "client-debit", memo="refund 12")  # a client's text, no more
    from_wallet = make_order(customer, price_minor=1200)
    db.session.commit()
    pay_order_from_wallet(customer, from_wallet.id, "pay-from-wallet")
    refund_wallet_order(from_wallet.id, 400, "goodwill", "ops", uuid.uuid4())
    (refunded, refunded_by), (charged_back, payment) = (
        _card_paid(customer, 2000),
        _card_paid(customer, 700),
    )
    card_refund = make_refund(refunded_by, amount_minor=500)
    assert move_refund(card_refund, RefundStatus.SUCCEEDED, source=TransitionSource.WEBHOOK)
    dispute = make_dispute(payment, DisputeStatus.WARNING_NEEDS_RESPONSE)
    assert move_dispute(
        dispute, payment, DisputeStatus.NEEDS_RESPONSE, source=TransitionSource.WEBHOOK, reason="t"
    )
    db.session.commit()
    return wallet, from_wallet, refunded, charged_back


def test_every_movement_rebuilds_to_what_the_tables_say(app_ctx: Flask) -> None:
    wallet, from_wallet, refunded, charged_back = _every_movement(app_ctx)
    assert got(Wallet, wallet.id).balance_minor == 5000 - 300 - 1200 + 400
    assert [o.status for o in (from_wallet, refunded, charged_back)] == [
        OrderStatus.PARTIALLY_REFUNDED,
        OrderStatus.PARTIALLY_REFUNDED,
        OrderStatus.DISPUTED,
    ]
    result = rebuild.check()
    assert result.mismatches == []
    assert (result.wallets, result.orders) == (1, 3)


@pytest.mark.parametrize(
    ("tampering", "named"),
    [
        (
            "UPDATE wallets SET balance_minor = balance_minor + 1",
            "balance €39.01, its account owes €39.00",
        ),
        ("UPDATE refunds SET is_effect_applied = false WHERE provider = 'wallet'", "refunded"),
        (
            "UPDATE disputes SET withdrawn_minor = 1",
            "disputed €0.01 by its movements, €7.00 by the books",
        ),
        (
            "UPDATE payments SET is_effect_applied = false",
            "paid €0.00 by its movements, €20.00 by the books",
        ),
        ("UPDATE orders SET status = 'open'", "is open, the books say it was paid"),
    ],
)
def test_a_table_changed_behind_the_books_back_is_named(
    app_ctx: Flask, tampering: str, named: str
) -> None:
    _every_movement(app_ctx)
    db.session.execute(text(tampering))
    db.session.commit()
    result = rebuild.check()
    assert result.mismatches, tampering
    assert any(named in mismatch for mismatch in result.mismatches), result.mismatches


def test_an_order_never_paid_is_clean_and_one_marked_paid_without_books_is_not(
    app_ctx: Flask,
) -> None:
    open_order = make_order(make_customer())
    db.session.commit()
    assert rebuild.check().mismatches == []
    open_order.status = OrderStatus.PAID  # no movement paid it
    db.session.commit()
    assert rebuild.check().mismatches == [
        f"order {open_order.id} is paid, the books say it was never paid"
    ]
