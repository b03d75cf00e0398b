"""A charge's success in one statement: the lean charge's two statements, the same
statement in every other success's transaction (a lookup, a webhook, an admin), and the
ORM path for whatever is not the success's case (nothing applied twice, nothing lost)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import (
    Account,
    EmailKind,
    LedgerEntry,
    LedgerKind,
    Order,
    OrderStatus,
    OutboxMessage,
    Payment,
    PaymentStatus,
    PaymentTransition,
    ProviderCall,
    Source,
    SourceKind,
    TransitionSource,
    Wallet,
)
from services.accounts import provider_customers
from services.books import journal
from services.movements.locks import lock_payment
from services.payments import settling
from services.payments.state import move
from services.platform import call_log
from services.wallet import ledger
from tests.factories import make_customer, make_order, make_payment, make_topup
from tests.helpers import (
    charge_calls,
    charge_payment,
    committed_payment,
    committed_topup,
    payment,
    rows,
    run_notification_jobs,
)
from tests.lock_support import lock_waiters
from tests.round_trips import counted

# What differs between two payments whatever path settled them.
OWN = {
    "id",
    "idempotency_key",
    "customer_id",
    "order_id",
    "wallet_id",
    "provider_payment_id",
    "provider_customer_id",  # each customer's own Stripe Customer
}
# The call's own timing and request id, and the recipient (each customer's own address).
LEFT_OUT = {"payment_id", "subject_id", "duration_ms", "request_id", "recipient"}
# (and the clocks' offset, which the ORM path keeps for a later lookup: a success needs none)
TIMES = {
    "created_at",
    "updated_at",
    "first_sent_at",
    "last_sent_at",
    "started_at",
    "paid_at",
    "provider_clock_offset_s",
}


def test_a_success_takes_two_statements(
    app: Flask, make_app: Any, server_urls: dict[str, str]
) -> None:
    with counted(server_urls["database"]) as (db_url, database):
        lean = make_app(SQLALCHEMY_DATABASE_URI=db_url)
        warm_up, order_payment = committed_payment(lean), committed_payment(lean)
        topup = committed_topup(lean)
        with lean.app_context():
            charge_payment(warm_up)  # connects the pool
            for returning in (order_payment, topup):  # customers that paid before
                provider_customers.create(payment(lean, returning).customer_id, "stripe")
            database.reset()
            charge_payment(order_payment)
            order_trips = database.reset()
            charge_payment(topup)
            topup_trips = database.reset()
    # The claim, then the settle statement (autocommit: no BEGIN, no COMMIT).
    assert (order_trips, topup_trips) == (2, 2)
    assert payment(app, order_payment).status == PaymentStatus.SUCCEEDED
    assert payment(app, topup).status == PaymentStatus.SUCCEEDED


@pytest.mark.parametrize("make", [committed_payment, committed_topup], ids=["order", "topup"])
def test_the_lean_settle_writes_what_the_orm_path_writes(
    app: Flask, monkeypatch: pytest.MonkeyPatch, make: Any
) -> None:
    lean_id, orm_id = make(app), make(app)
    with app.app_context():
        charge_payment(lean_id)
        with monkeypatch.context() as patched:  # the ORM path for the same answer
            patched.setattr(settling, "settle", lambda _c, _o, calls: _written_calls(calls))
            charge_payment(orm_id)
        lean, orm = _written(lean_id), _written(orm_id)
    assert lean["payment"]["status"] == PaymentStatus.SUCCEEDED
    assert lean["payment"]["is_effect_applied"] and lean["transitions"] and lean["calls"]
    credited = "WALLET" if make is committed_topup else "revenue"
    amount = lean["payment"]["amount_minor"]
    assert lean["journal"] == {
        "succeeded": [("clearing:stripe", amount, "EUR"), (credited, -amount, "EUR")]
    }
    assert lean == orm


def test_a_charge_after_the_database_dropped_its_connections_goes_through(
    app: Flask, drop_connections: Callable[[], int]
) -> None:
    warm_up, payment_id = committed_payment(app), committed_payment(app)
    with app.app_context():
        charge_payment(warm_up)  # the lean pool holds a connection
        assert drop_connections()
        charge_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED


def test_a_lean_success_logs_its_move_and_wakes_the_sender(
    app: Flask, caplog: pytest.LogCaptureFixture, mail_sink: Any
) -> None:
    payment_id = committed_topup(app)
    with app.app_context(), caplog.at_level(logging.INFO, logger="services.movements.machine"):
        charge_payment(payment_id)
    provider_id = payment(app, payment_id).provider_payment_id
    # Only the movement's records: an earlier test that dropped the database's
    # connections leaves a dead one in the lean pool, whose retry logs a warning.
    moves = [r for r in caplog.records if r.name == "services.movements.machine"]
    assert [r.getMessage().split(": ", 1)[1] for r in moves] == [
        f"pending -> succeeded by charge: provider payment {provider_id}"
    ]
    assert moves[0].payment_id == payment_id  # type: ignore[attr-defined]  # a Row's columns are not typed
    run_notification_jobs(app)  # the receipt's doorbell rang
    assert [m["Subject"] for m in mail_sink.messages()] == [
        f"Your receipt for payment #{payment_id}"
    ]


def test_a_second_charge_job_finds_nothing_to_do(app: Flask, sandbox: Any) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
        charge_payment(payment_id)  # the job run twice: not pending any more
    assert len(sandbox.requests_log(endpoint="create")) == 1
    assert payment(app, payment_id).send_count == 1


def test_a_success_that_leaves_out_its_amount_goes_to_review(app: Flask, sandbox: Any) -> None:
    sandbox.add_fault("tamper", field="amount", value=None, dialect="stripe", endpoint="create")
    payment_id = committed_topup(app)
    with app.app_context():
        charge_payment(payment_id)
    charged = payment(app, payment_id)
    assert charged.status == PaymentStatus.NEEDS_REVIEW and not charged.is_effect_applied
    assert rows(app, LedgerEntry) == 0 and charge_calls(app) == 1


def test_a_settle_whose_connection_dropped_takes_the_orm_path(
    app: Flask, sandbox: Any, drop_connections: Callable[[], int]
) -> None:
    sandbox.add_fault(
        "latency", ms=600, dialect="stripe", endpoint="create"
    )  # under the 1 s read timeout
    payment_id = committed_payment(app)
    with app.app_context():
        charging = threading.Thread(target=_charge_in, args=(app, payment_id))
        charging.start()
        sandbox.wait_for_request("create")  # the call is in flight; the claim committed
        assert drop_connections()  # the lean pool's connection with them
        charging.join(10)
    charged = payment(app, payment_id)
    assert charged.status == PaymentStatus.SUCCEEDED and charged.is_effect_applied
    assert charge_calls(app) == 1  # written once, by the fallback


def test_an_order_paid_meanwhile_takes_the_orm_path_to_review(app: Flask) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        order = db.session.get_one(Order, payment(app, payment_id).order_id)
        order.status = OrderStatus.PAID  # another payment of it succeeded first
        db.session.commit()
        charge_payment(payment_id)
        reasons = db.session.scalars(
            select(PaymentTransition.reason).where(PaymentTransition.payment_id == payment_id)
        ).all()
    charged = payment(app, payment_id)
    assert charged.status == PaymentStatus.NEEDS_REVIEW and not charged.is_effect_applied
    assert reasons[-1] == f"order {charged.order_id} was already paid"
    assert charged.lease_expires_at is None
    assert charge_calls(app) == 1  # the call's row once, though both paths ran
    assert rows(app, OutboxMessage) == 1  # the review alert, no receipt


def test_a_topup_waits_for_a_debit_holding_its_wallet_and_credits_after_it(app: Flask) -> None:
    topup_id = committed_topup(app, 700)
    with app.app_context():
        wallet_id = payment(app, topup_id).wallet_id
        assert wallet_id is not None
        ledger.credit(db.session.get_one(Wallet, wallet_id), 1000, "seed")
        # A debit in an open transaction: it holds the wallet's lock.
        ledger.apply_movement(
            wallet_id, -300, "EUR", operation_id="debit-1", kind=LedgerKind.DEBIT, memo="x"
        )
        charging = threading.Thread(target=_charge_in, args=(app, topup_id))
        charging.start()
        deadline = time.monotonic() + 10
        while lock_waiters(db.engine) == 0 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lock_waiters(db.engine) == 1  # the settle statement, at the wallet
        db.session.commit()
        charging.join(10)
        entries = db.session.scalars(select(LedgerEntry).order_by(LedgerEntry.id)).all()
        balance = db.session.get_one(Wallet, wallet_id).balance_minor
    assert payment(app, topup_id).status == PaymentStatus.SUCCEEDED
    assert balance == 1000 - 300 + 700
    assert [(e.amount_minor, e.balance_after_minor) for e in entries] == [
        (1000, 1000),
        (-300, 700),
        (700, 1400),
    ]


@pytest.mark.parametrize("make", [make_payment, make_topup], ids=["order", "topup"])
def test_an_admins_success_takes_the_one_statement_in_the_callers_transaction(
    app_ctx: Flask, make: Any
) -> None:
    customer = make_customer()
    made = make(make_order(customer)) if make is make_payment else make(customer, 700)
    made.status = PaymentStatus.NEEDS_REVIEW
    db.session.commit()
    locked = lock_payment(made.id)
    assert locked is not None
    # The objects this session holds see what the statement wrote, before the commit.
    order = db.session.get(Order, locked.order_id) if locked.order_id else None
    wallet = db.session.get(Wallet, locked.wallet_id) if locked.wallet_id else None
    assert move(
        locked, PaymentStatus.SUCCEEDED, source=TransitionSource.ADMIN, reason="seen", actor="ops"
    )
    assert (locked.status, locked.is_effect_applied) == (PaymentStatus.SUCCEEDED, True)
    if order is not None:
        assert (order.status, order.paid_at is not None) == (OrderStatus.PAID, True)
    if wallet is not None:
        assert wallet.balance_minor == 700
    db.session.rollback()  # ... and all of it in the caller's transaction
    assert db.session.get_one(Payment, made.id).status == PaymentStatus.NEEDS_REVIEW
    assert db.session.scalars(select(PaymentTransition.id)).all() == []
    assert db.session.scalars(select(OutboxMessage.id)).all() == []
    assert move(
        lock_payment(made.id),  # type: ignore[arg-type]  # it exists (made above)
        PaymentStatus.SUCCEEDED,
        source=TransitionSource.ADMIN,
        reason="seen",
        actor="ops",
    )
    db.session.commit()
    [moved] = db.session.execute(
        select(
            PaymentTransition.from_status,
            PaymentTransition.source,
            PaymentTransition.actor,
            PaymentTransition.reason,
        )
    ).all()
    assert tuple(moved) == (PaymentStatus.NEEDS_REVIEW, TransitionSource.ADMIN, "ops", "seen")
    assert db.session.scalars(select(OutboxMessage.kind)).all() == [EmailKind.RECEIPT]


def _charge_in(app: Flask, payment_id: int) -> None:
    with app.app_context():
        charge_payment(payment_id)


def _written_calls(calls: list[Any]) -> bool:
    for call in calls:
        call_log.write(call)
    return False


def _columns(row: Any, leave_out: set[str] = OWN | TIMES) -> dict[str, Any]:
    return {
        column.key: getattr(row, column.key)
        for column in row.__table__.columns
        if column.key not in leave_out
    }


def _named(key: str, value: object, provider_id: str, payment_id: int) -> object:
    """The provider's and our id in a text column, as names (they differ between payments)."""
    if key in ("reason", "operation_id") and isinstance(value, str):
        return value.replace(provider_id, "PI").replace(str(payment_id), "ID")
    if key == "source_id" and value == payment_id:
        return "ID"
    return value


def _written(payment_id: int) -> dict[str, Any]:
    """What charging the payment wrote, without what differs between any two payments."""
    found = db.session.get_one(Payment, payment_id)
    provider_id = found.provider_payment_id or ""
    where = {
        "transitions": PaymentTransition.payment_id == payment_id,
        "calls": ProviderCall.subject_id == payment_id,
        "emails": OutboxMessage.subject_id == payment_id,
        # (only payments post in these tests: the source id alone names the top-up's)
        "entries": LedgerEntry.source_id == payment_id,
    }
    written: dict[str, Any] = {"payment": _columns(found)}
    for name, condition in where.items():
        model = condition.left.table
        found_rows = db.session.execute(select(model).where(condition)).all()
        written[name] = [
            {
                key: _named(key, value, provider_id, payment_id)
                for key, value in row._mapping.items()
                if key not in OWN | TIMES | LEFT_OUT
            }
            for row in found_rows
        ]
    if found.order_id is not None:
        order = db.session.get_one(Order, found.order_id)
        written["order"] = (order.status, order.paid_at is not None)
    if found.wallet_id is not None:
        written["balance"] = db.session.get_one(Wallet, found.wallet_id).balance_minor
        wallet = Account.wallet(found.wallet_id)
    written["journal"] = {
        step: [
            (account.replace(wallet, "WALLET") if found.wallet_id else account, amount, cur)
            for account, amount, cur in legs
        ]
        for step, legs in journal.entries_of(Source(SourceKind.PAYMENT, payment_id)).items()
    }
    return written
