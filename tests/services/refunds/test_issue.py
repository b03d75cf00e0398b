"""Asking for a refund: never beyond what was charged (also with ten at once), one refund
per key, a top-up's money out of the wallet first, a wallet-paid order back to the wallet."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select

from extensions import db
from models import (
    Dispute,
    LedgerEntry,
    Order,
    OrderStatus,
    Payment,
    Refund,
    RefundStatus,
    Wallet,
)
from services.payments.wallet_orders import pay_order_from_wallet
from services.platform.errors import ClientError
from services.refunds.issue import refund_payment, refund_wallet_order
from services.wallet import ledger
from services.wallet.audit import audit_wallets
from tests.factories import make_customer, make_dispute, make_order, make_wallet
from tests.helpers import (
    charged,
    committed_payment,
    committed_topup,
    got,
    run_jobs,
    sandbox_refunds,
    send_refund,
    wallet_balance,
)


def _ask(app: Flask, payment_id: int, amount: object = None, **kw: Any) -> Refund:
    with app.app_context():
        refund, _ = refund_payment(
            payment_id,
            amount,
            kw.get("reason", "customer asked"),
            "ops@example.com",
            kw.get("key") or uuid.uuid4(),
        )
        db.session.expunge(refund)
        return refund


def _count(app: Flask, model: Any) -> int:
    with app.app_context():
        return int(db.session.scalar(select(func.count()).select_from(model)) or 0)


def _refused(app: Flask, call: Any) -> str:
    with pytest.raises(ClientError) as refused, app.app_context():
        call()
    return refused.value.code


def test_an_over_refund_is_refused_and_writes_nothing(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))  # 1000 EUR
    _ask(app, payment_id, 600)
    code = _refused(app, lambda: refund_payment(payment_id, 401, "too much", "ops", uuid.uuid4()))
    assert code == "refund_exceeds_charge"
    assert _count(app, Refund) == 1
    _ask(app, payment_id, 400)  # exactly what is left
    code = _refused(app, lambda: refund_payment(payment_id, None, "again", "ops", uuid.uuid4()))
    assert code == "fully_refunded"


@pytest.mark.parametrize(
    ("amount", "reason", "code"),
    [(0, "a reason", "invalid_amount"), (-5, "a reason", "invalid_amount"),
     (True, "a reason", "invalid_amount"), (100, "   ", "reason_required")],
)  # fmt: skip
def test_bad_requests_write_nothing(
    app: Flask, sandbox: Any, amount: Any, reason: str, code: str
) -> None:
    payment_id = charged(app, committed_payment(app))
    assert (
        _refused(app, lambda: refund_payment(payment_id, amount, reason, "ops", uuid.uuid4()))
        == code
    )
    assert _count(app, Refund) == 0


def test_only_a_charged_payment_is_refunded(app: Flask) -> None:
    payment_id = committed_payment(app)  # pending
    code = _refused(app, lambda: refund_payment(payment_id, None, "not yet", "ops", uuid.uuid4()))
    assert code == "payment_not_refundable"


def test_a_payment_whose_money_a_chargeback_holds_is_not_refunded(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))
    with app.app_context():
        found = db.session.get(Payment, payment_id)
        assert found is not None
        dispute = make_dispute(found, is_withdrawn=True)
        db.session.commit()
        dispute_id = dispute.id
    key = uuid.uuid4()
    code = _refused(app, lambda: refund_payment(payment_id, None, "customer asked", "ops", key))
    assert code == "payment_disputed"
    assert _count(app, Refund) == 0 and sandbox_refunds(sandbox) == []
    with app.app_context():
        got(Dispute, dispute_id).is_effect_applied = False
        db.session.commit()  # an inquiry, or a dispute won: refundable again
        refund_payment(payment_id, None, "customer asked", "ops", uuid.uuid4())
    assert _count(app, Refund) == 1


def test_one_refund_per_key(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))
    key = uuid.uuid4()
    first = _ask(app, payment_id, 200, key=key)
    again = _ask(app, payment_id, 200, key=key)
    assert again.id == first.id and _count(app, Refund) == 1
    code = _refused(app, lambda: refund_payment(payment_id, 300, "other", "ops", key))
    assert code == "idempotency_key_reused"


def test_ten_concurrent_full_refunds_make_one(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))
    start, answers = threading.Barrier(10), list[int | str]()

    def one() -> None:
        with app.app_context():
            start.wait()
            try:
                refund, _ = refund_payment(payment_id, None, "all of it", "ops", uuid.uuid4())
                answers.append(refund.id)
            except ClientError as exc:
                answers.append(exc.code)
            finally:
                db.session.remove()

    threads = [threading.Thread(target=one) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(str(a) for a in answers).count("fully_refunded") == 9
    run_jobs(app)
    assert [r["amount"] for r in sandbox_refunds(sandbox)] == [1000]


def test_a_top_up_refund_takes_the_money_out_of_the_wallet_first(app: Flask, sandbox: Any) -> None:
    topup = charged(app, committed_topup(app, 700))
    assert wallet_balance(app, topup) == 700
    refund = _ask(app, topup, 500)
    assert wallet_balance(app, topup) == 200  # before any provider call
    with app.app_context():
        send_refund(refund.id)
        assert audit_wallets().is_ok
    assert [r["amount"] for r in sandbox_refunds(sandbox)] == [500]


def test_a_spent_top_up_is_not_refunded_and_nothing_moves(app: Flask, sandbox: Any) -> None:
    topup = charged(app, committed_topup(app, 700))
    with app.app_context():
        payment = db.session.get(Payment, topup)
        assert payment is not None and payment.wallet_id is not None
        target = db.session.get(Wallet, payment.wallet_id)
        assert target is not None
        ledger.debit(target, 600, "spend-it")
    entries = _count(app, LedgerEntry)
    code = _refused(app, lambda: refund_payment(topup, 700, "customer asked", "ops", uuid.uuid4()))
    assert code == "credit_spent"
    assert _count(app, Refund) == 0 and _count(app, LedgerEntry) == entries
    assert wallet_balance(app, topup) == 100
    assert sandbox_refunds(sandbox) == []


def test_a_refused_top_up_refund_puts_the_money_back(app: Flask, sandbox: Any) -> None:
    topup = committed_topup(app, 700)
    charged(app, topup)
    refund = _ask(app, topup, 700)
    sandbox.add_fault("error", status=400, count=1, dialect="stripe", endpoint="refund")
    assert wallet_balance(app, topup) == 0
    with app.app_context():
        send_refund(refund.id)
        assert got(Refund, refund.id).status == RefundStatus.FAILED
        assert audit_wallets().is_ok
    assert wallet_balance(app, topup) == 700


def test_an_order_paid_from_the_wallet_is_refunded_to_the_wallet(app: Flask) -> None:
    with app.app_context():
        customer = make_customer()
        order = make_order(customer)  # 1000 EUR
        target = make_wallet(customer)
        ledger.credit(target, 1500, "fund")
        db.session.commit()
        order_id, wallet_id = order.id, target.id
        pay_order_from_wallet(customer, order_id, str(uuid.uuid4()))
        refund, _ = refund_wallet_order(order_id, 400, "damaged", "ops", uuid.uuid4())
        assert refund.status == RefundStatus.SUCCEEDED
        assert got(Order, order_id).status == OrderStatus.PARTIALLY_REFUNDED
        assert got(Wallet, wallet_id).balance_minor == 500 + 400
        refund_wallet_order(order_id, None, "the rest", "ops", uuid.uuid4())
        assert got(Order, order_id).status == OrderStatus.REFUNDED
        assert got(Wallet, wallet_id).balance_minor == 1500
        assert audit_wallets().is_ok
        with pytest.raises(ClientError):
            refund_wallet_order(order_id, 1, "too much", "ops", uuid.uuid4())
