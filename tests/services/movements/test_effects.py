"""Postings: a movement takes at most what the wallet holds, gives back exactly what its
postings took (read from the ledger), and a repeat of either moves nothing."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from flask import Flask

from extensions import db
from models import Account, LedgerKind, OrderStatus, RefundStatus, Source, SourceKind, Wallet
from services.books import journal
from services.books.journal import Leg
from services.movements import effects
from services.wallet import ledger
from tests.factories import (
    make_customer,
    make_dispute,
    make_order,
    make_payment,
    make_refund,
    make_wallet,
)


def _wallet(app: Flask, balance: int) -> int:
    with app.app_context():
        wallet = make_wallet(make_customer())
        db.session.commit()
        ledger.credit(wallet, balance, f"seed-{wallet.id}")
        return wallet.id


CLEARING = Account.clearing("stripe")


def _out(step: str, currency: str = "EUR") -> dict[str, Any]:
    """A take's step, against the provider's clearing account."""
    return {"step": step, "against": lambda n: [Leg(CLEARING, -n, currency)]}


def _in(step: str, currency: str = "EUR") -> dict[str, Any]:
    """A give-back's step, out of the provider's clearing account."""
    return {"step": step, "against": lambda n: [Leg(CLEARING, n, currency)]}


def _balance(wallet_id: int) -> int:
    wallet = db.session.get(Wallet, wallet_id, populate_existing=True)
    assert wallet is not None
    return wallet.balance_minor


def test_take_never_more_than_the_wallet_holds_and_give_back_only_what_was_taken(
    app_ctx: Flask,
) -> None:
    wallet_id = _wallet(app_ctx, 300)
    dispute = Source(SourceKind.DISPUTE, 1)
    args: Any = {"kind": LedgerKind.DISPUTE, "source": dispute}
    assert effects.take(wallet_id, 500, "EUR", operation_id="d1:take", **_out("w1"), **args) == 300
    assert _balance(wallet_id) == 0 and effects.posted(dispute, wallet_id) == -300
    empty = effects.take(wallet_id, 500, "EUR", operation_id="d1:take2", **_out("w2"), **args)
    assert empty == 0
    db.session.commit()
    assert effects.give_back(wallet_id, "EUR", operation_id="d1:back", **_in("r1"), **args) == 300
    assert _balance(wallet_id) == 300 and effects.posted(dispute, wallet_id) == 0
    # Nothing is out any more: a second decision gives nothing back.
    assert effects.give_back(wallet_id, "EUR", operation_id="d1:back2", **_in("r2"), **args) == 0
    db.session.commit()
    assert _balance(wallet_id) == 300


def test_a_movement_that_moves_no_money_of_the_wallet_still_posts_its_other_legs(
    app_ctx: Flask,
) -> None:
    """A chargeback of a top-up whose credit was spent: the wallet gives nothing, the
    provider still took the money: the dispute's loss, against clearing."""
    wallet_id = _wallet(app_ctx, 100)  # (the customer's other money: never the top-up's)
    dispute = Source(SourceKind.DISPUTE, 4)
    legs = lambda taken: [  # noqa: E731
        Leg(Account.DISPUTES, 500 - taken, "EUR"),
        Leg(CLEARING, -500, "EUR"),
    ]
    args: Any = {"kind": LedgerKind.DISPUTE, "source": dispute, "step": "withdrawn:1"}
    assert effects.take(wallet_id, 0, "EUR", operation_id="d4", against=legs, **args) == 0
    assert journal.entries_of(dispute) == {
        "withdrawn:1": [("disputes", 500, "EUR"), ("clearing:stripe", -500, "EUR")]
    }
    # Nothing at all to post (a give-back of nothing): no entry.
    nothing = effects.give_back(
        wallet_id,
        "EUR",
        operation_id="d4:back",
        kind=LedgerKind.DISPUTE,
        source=dispute,
        **_in("r"),
    )
    assert nothing == 0 and list(journal.entries_of(dispute)) == ["withdrawn:1"]


def test_a_repeated_posting_moves_nothing(app_ctx: Flask) -> None:
    wallet_id = _wallet(app_ctx, 1000)
    dispute = Source(SourceKind.DISPUTE, 2)
    args: Any = {"kind": LedgerKind.DISPUTE, "source": dispute}
    effects.take(wallet_id, 400, "EUR", operation_id="d2:take", **_out("w1"), **args)
    effects.take(wallet_id, 400, "EUR", operation_id="d2:take", **_out("w1"), **args)  # again
    db.session.commit()
    assert _balance(wallet_id) == 600 and effects.posted(dispute, wallet_id) == -400
    # Another movement's postings are its own, and so are another wallet's.
    assert effects.posted(Source(SourceKind.DISPUTE, 3), wallet_id) == 0
    assert effects.posted(Source(SourceKind.REFUND, 2), wallet_id) == 0
    assert effects.posted(dispute, _wallet(app_ctx, 5)) == 0


# An order's status is read from what its movements applied, whatever order they came in.
APPLIED = ("paid", "refund 400", "refund 600", "dispute")


def _expected(applied: set[str]) -> OrderStatus:
    if "paid" not in applied:
        return OrderStatus.OPEN
    if "dispute" in applied:
        return OrderStatus.DISPUTED
    refunded = 400 * ("refund 400" in applied) + 600 * ("refund 600" in applied)
    return {0: OrderStatus.PAID, 1000: OrderStatus.REFUNDED}.get(
        refunded, OrderStatus.PARTIALLY_REFUNDED
    )


@pytest.mark.parametrize("sequence", list(itertools.permutations(APPLIED)))
def test_an_orders_status_follows_its_movements_in_any_order(
    app_ctx: Flask, sequence: tuple[str, ...]
) -> None:
    order = make_order(make_customer(), price_minor=1000)
    payment = make_payment(order)
    refunds = {
        f"refund {n}": make_refund(payment, RefundStatus.SUCCEEDED, amount_minor=n)
        for n in (400, 600)
    }
    dispute = make_dispute(payment)
    assert effects.settle_order(order) == OrderStatus.OPEN and order.paid_at is None
    applied: set[str] = set()
    for step in sequence:
        if step == "paid":
            payment.is_effect_applied = True
        elif step == "dispute":
            dispute.is_effect_applied = True
        else:
            refunds[step].is_effect_applied = True
        applied.add(step)
        # Before it is paid, a refund or a dispute changes nothing (the order stays open).
        assert effects.settle_order(order) == _expected(applied)
    assert order.status == OrderStatus.DISPUTED and order.paid_at is not None
    dispute.is_effect_applied = False  # won: the money came back
    assert effects.settle_order(order) == OrderStatus.REFUNDED
    payment.is_effect_applied = False  # reversed, yet refunded: a contradiction for a
    assert effects.settle_order(order) == OrderStatus.REFUNDED  # person, left as it is


def test_a_wallet_paid_order_and_a_reversed_payment(app_ctx: Flask) -> None:
    customer = make_customer()
    order = make_order(customer, price_minor=700)
    wallet = make_wallet(customer)
    ledger.credit(wallet, 700, f"seed-{wallet.id}")
    ledger.apply_movement(
        wallet.id,
        -700,
        "EUR",
        operation_id="pay-1",
        kind=LedgerKind.ORDER,
        source=Source(SourceKind.ORDER, order.id),
    )
    assert effects.wallet_paid(order.id) == 700
    assert effects.settle_order(order) == OrderStatus.PAID
    card = make_order(customer)
    payment = make_payment(card)
    payment.is_effect_applied = True
    assert effects.settle_order(card) == OrderStatus.PAID
    payment.is_effect_applied = False  # an admin decided it failed after all
    assert effects.settle_order(card) == OrderStatus.OPEN and card.paid_at is None


def test_one_minor_unit_is_taken_and_given_back_and_only_in_the_wallets_currency(
    app_ctx: Flask,
) -> None:
    customer = make_customer()
    wallet = make_wallet(customer, "USD")
    ledger.credit(wallet, 1, "seed-usd")
    dispute = Source(SourceKind.DISPUTE, 9)
    args: Any = {"kind": LedgerKind.DISPUTE, "source": dispute}
    with pytest.raises(ledger.CurrencyMismatchError):
        effects.take(wallet.id, 5, "EUR", operation_id="d9:eur", **_out("w0", "EUR"), **args)
    assert effects.take(wallet.id, 5, "USD", operation_id="d9:take", **_out("w1", "USD"), **args)
    with pytest.raises(ledger.CurrencyMismatchError):
        effects.give_back(wallet.id, "EUR", operation_id="d9:eur-back", **_in("r0", "EUR"), **args)
    assert effects.give_back(wallet.id, "USD", operation_id="d9:back", **_in("r1", "USD"), **args)
    db.session.commit()
    assert _balance(wallet.id) == 1 and effects.posted(dispute, wallet.id) == 0


def test_what_a_wallet_paid_is_its_order_postings_only(app_ctx: Flask) -> None:
    customer = make_customer()
    order = make_order(customer, price_minor=700)
    wallet = make_wallet(customer)
    ledger.credit(wallet, 1000, "seed")
    post: Any = {"source": Source(SourceKind.ORDER, order.id), "kind": LedgerKind.ORDER}
    ledger.apply_movement(wallet.id, -700, "EUR", operation_id="p", **post)
    refund = make_refund(make_payment(order), amount_minor=200)
    back: Any = {"source": Source(SourceKind.REFUND, refund.id), "kind": LedgerKind.REFUND}
    ledger.apply_movement(wallet.id, 200, "EUR", operation_id="r", **back)
    # A client's debit whose text names the order is no payment of it either.
    ledger.apply_movement(
        wallet.id, -50, "EUR", operation_id="d", kind=LedgerKind.DEBIT, memo=f"order {order.id}"
    )
    assert effects.wallet_paid(order.id) == 700  # the refund is not paying


def test_a_topup_holds_its_credit_less_its_own_refunds_and_disputes(app_ctx: Flask) -> None:
    customer = make_customer()
    wallet = make_wallet(customer)
    topup, other = make_payment(make_order(customer)), make_payment(make_order(customer))
    ledger.apply_movement(
        wallet.id,
        1000,
        "EUR",
        operation_id="t",
        kind=LedgerKind.TOPUP,
        source=Source(SourceKind.PAYMENT, topup.id),
        against=[Leg(CLEARING, 1000, "EUR")],
    )
    refund, dispute = SourceKind.REFUND, SourceKind.DISPUTE
    postings = [  # (what, amount): the top-up's own, then the other payment's
        (Source(refund, make_refund(topup).id), -300),
        (Source(dispute, make_dispute(topup).id), -200),
        (Source(refund, make_refund(other).id), -100),
        (Source(dispute, make_dispute(other).id), -50),
    ]
    for number, (source, amount) in enumerate(postings):
        kind = LedgerKind.REFUND if source.kind == refund else LedgerKind.DISPUTE
        ledger.apply_movement(
            wallet.id, amount, "EUR", operation_id=f"p{number}", kind=kind, source=source
        )
    # Client debits whose text names the top-up and its movements count for nothing.
    for number, memo in enumerate((f"payment {topup.id}", str(postings[0][0]), "dispute 1")):
        ledger.apply_movement(
            wallet.id, -1, "EUR", operation_id=f"m{number}", kind=LedgerKind.DEBIT, memo=memo
        )
    assert effects.held_by_topup(topup.id, wallet.id) == 500
    # its own postings: no credit, two debits
    assert effects.held_by_topup(other.id, wallet.id) == -150
    assert effects.held_by_topup(topup.id, make_wallet(make_customer()).id) == 0


def test_a_topup_with_no_postings_holds_nothing(app_ctx: Flask) -> None:
    customer = make_customer()
    wallet = make_wallet(customer)
    assert effects.held_by_topup(make_payment(make_order(customer)).id, wallet.id) == 0


def test_an_orders_status_reads_only_its_own_movements(app_ctx: Flask) -> None:
    customer = make_customer()
    mine, other, unpaid = make_order(customer), make_order(customer), make_order(customer)
    make_payment(mine).is_effect_applied = True
    paid = make_payment(other)
    paid.is_effect_applied = True
    make_refund(paid, RefundStatus.SUCCEEDED).is_effect_applied = True
    make_dispute(paid, is_withdrawn=True)
    assert effects.order_status(mine) == OrderStatus.PAID  # the other's refund and dispute
    assert effects.order_status(other) == OrderStatus.DISPUTED
    wallet = make_wallet(customer)
    ledger.credit(wallet, 5000, "seed")
    debit: Any = {"kind": LedgerKind.DEBIT, "memo": f"order {unpaid.id}"}
    ledger.apply_movement(wallet.id, -700, "EUR", operation_id="not-an-order-payment", **debit)
    assert effects.order_status(unpaid) == OrderStatus.OPEN  # a debit is not its payment


def test_one_minor_unit_pays_an_order_and_one_refunded_makes_it_partly_refunded(
    app_ctx: Flask,
) -> None:
    customer = make_customer()
    order = make_order(customer, price_minor=1)
    wallet = make_wallet(customer)
    ledger.credit(wallet, 1, "seed")
    post: Any = {"kind": LedgerKind.ORDER, "source": Source(SourceKind.ORDER, order.id)}
    ledger.apply_movement(wallet.id, -1, "EUR", operation_id="pay", **post)
    assert effects.order_status(order) == OrderStatus.PAID
    card = make_order(customer)
    payment = make_payment(card)
    payment.is_effect_applied = True
    make_refund(payment, RefundStatus.SUCCEEDED, amount_minor=1).is_effect_applied = True
    assert effects.order_status(card) == OrderStatus.PARTIALLY_REFUNDED
