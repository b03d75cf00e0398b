"""A customer's records for their dashboard page: theirs only, newest first, of every kind."""

from __future__ import annotations

from flask import Flask

from extensions import db
from services.backoffice.records import customer_records
from tests.factories import make_customer, make_order, make_payment, make_refund, make_wallet


def test_a_customers_records_are_theirs_and_newest_first(app_ctx: Flask) -> None:
    anna, bob = make_customer("anna@example.com"), make_customer("bob@example.com")
    first, second = make_payment(make_order(anna)), make_payment(make_order(anna))
    make_payment(make_order(bob))
    refund = make_refund(second)
    wallet = make_wallet(anna)
    db.session.flush()
    assert [p.id for p in customer_records(anna, "payments")] == [second.id, first.id]
    assert [o.id for o in customer_records(anna, "orders")] == [second.order_id, first.order_id]
    assert [r.id for r in customer_records(anna, "refunds")] == [refund.id]
    assert [w.id for w in customer_records(anna, "wallets")] == [wallet.id]
    assert customer_records(bob, "refunds") == [] and customer_records(anna, "emails") == []
