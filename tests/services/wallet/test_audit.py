"""The wallet audit: balances against the ledger, the ledger against payments and orders."""

from __future__ import annotations

from typing import Any

from flask import Flask
from sqlalchemy import text

from extensions import db
from models import Payment, PaymentStatus
from services.wallet.audit import audit_wallets, last_audit
from tests.helpers import charge_payment, committed_payment, committed_topup, new_wallet


def test_audit_finds_a_balance_changed_without_the_ledger(app: Flask, runner: Any) -> None:
    wallet_id = new_wallet(app, 100)
    ok = runner.invoke(args=["wallet", "audit"])
    assert ok.exit_code == 0 and "0 mismatches" in ok.output
    with app.app_context():
        db.session.execute(
            text("UPDATE wallets SET balance_minor = 90 WHERE id = :id"), {"id": wallet_id}
        )
        db.session.commit()
    bad = runner.invoke(args=["wallet", "audit"])
    assert bad.exit_code == 1
    assert f"wallet {wallet_id} (EUR): balance €0.90 != ledger sum €1.00" in bad.output
    with app.app_context():
        remembered = last_audit()
    assert remembered is not None and remembered["mismatches"] == [
        f"wallet {wallet_id} (EUR): balance €0.90 != ledger sum €1.00",
        f"wallet {wallet_id}: balance €0.90, its account owes €1.00",  # the books say so too
    ]


def test_the_audit_compares_the_ledger_with_payments_and_orders(
    app: Flask, runner: Any, sandbox: Any
) -> None:
    topup_id = committed_topup(app, amount_minor=400)
    order_payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(topup_id)
        charge_payment(order_payment_id)
        assert audit_wallets().mismatches == []
        # What the old admin 'failed' left behind: a failed top-up whose credit stands,
        # and a paid order whose payment failed.
        for payment_id in (topup_id, order_payment_id):
            found = db.session.get(Payment, payment_id)
            assert found is not None
            found.status = PaymentStatus.FAILED
            found.is_effect_applied = False
        db.session.commit()
        problems = audit_wallets().mismatches
    assert any(
        f"top-up payment {topup_id} (failed): credit minus refunds and chargebacks "
        f"minus reversals is €4.00" in p
        for p in problems
    )
    assert any("is paid, paid by 0 card payment(s)" in p for p in problems)
    result = runner.invoke(args=["wallet", "audit"])
    assert result.exit_code != 0
