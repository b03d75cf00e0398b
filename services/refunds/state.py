"""A refund's state machine and effects, in the caller's transaction.

Locks follow the one order (services/movements/locks.py): the order, the payment, the
refund, then the wallet. A refund's effect:
- a wallet top-up's refund takes the money out of the wallet when it is requested
  (before any provider call, refused if it was spent) and puts it back if the refund
  fails;
- an order's refund (card or wallet) marks the order partially refunded or refunded
  when it succeeds, and a wallet-paid order's refund credits the wallet then.
Every movement is a ledger entry with a UNIQUE operation id derived from the refund.
"""

from __future__ import annotations

import logging

from sqlalchemy import select

from extensions import db
from models import (
    REFUND_TRANSITIONS,
    Account,
    EmailKind,
    LedgerKind,
    Order,
    OrderStatus,
    Payment,
    PaymentPurpose,
    Refund,
    RefundStatus,
    RefundTransition,
    Source,
    SourceKind,
    TransitionSource,
    Wallet,
)
from models.refund import WALLET
from services.books import journal
from services.movements import effects, machine
from services.notifications.outbox import queue_email
from services.wallet import ledger

log = logging.getLogger(__name__)
_SUCCEEDED = "succeeded"  # the journal's step of a refund's success
TAKEN = "taken"  # and of a top-up's refund taking its money out of the wallet
REFUNDED_ORDER_STATUSES = (OrderStatus.PAID, OrderStatus.PARTIALLY_REFUNDED)


TABLE: machine.Table[RefundStatus] = machine.Table(
    noun="refund",
    transitions=REFUND_TRANSITIONS,
    final=frozenset({RefundStatus.SUCCEEDED, RefundStatus.FAILED}),
    review=RefundStatus.NEEDS_REVIEW,
    record=RefundTransition,
    owner="refund_id",
    # Stripe documents it: a refund reported succeeded may fail later (the card's bank
    # could not take the money back); never the other way.
    reversals=frozenset({(RefundStatus.SUCCEEDED, RefundStatus.FAILED)}),
    describe=lambda r: f"payment {r.payment_id}, key {r.idempotency_key}",
)


def record_creation(refund: Refund, source: TransitionSource = TransitionSource.ADMIN) -> None:
    reason = f"refund requested: {refund.reason}"
    machine.record(TABLE, refund, None, RefundStatus.PENDING, source, reason, refund.actor)


def move_refund(
    refund: Refund,
    to: RefundStatus,
    *,
    source: TransitionSource,
    reason: str = "",
    actor: str | None = None,
) -> bool:
    """Move a locked refund and record why (the rules: services/movements/machine.py);
    the effect follows the new state in the same transaction."""
    taken = machine.step(TABLE, refund, to, source=source, reason=reason, actor=actor)
    if taken is None:
        return False
    if taken.to == RefundStatus.SUCCEEDED:
        _apply_success(refund)
        _queue_refund_email(refund)
    elif taken.to == RefundStatus.FAILED:
        if taken.is_reversal:
            _reverse_success(refund)
            # The customer was told "your refund": now they are told it did not arrive.
            _queue_refund_email(refund, EmailKind.REFUND_FAILED)
        _undo(refund)
    if taken.is_reversal or taken.to == RefundStatus.NEEDS_REVIEW:
        queue_email(EmailKind.REFUND_ALERT, refund.id)  # to the admins, once per refund
    return True


def _source(refund: Refund) -> Source:
    return Source(SourceKind.REFUND, refund.id)


def _steps(refund: Refund, name: str) -> list[str]:
    """The refund's posted steps called `name` ("succeeded", "succeeded:2", ...)."""
    return [step for step in journal.entries_of(_source(refund)) if step.split(":")[0] == name]


def _next(refund: Refund, name: str) -> str:
    """The step a refund's next `name` posts: its first, or its n-th after a reversal (a
    refund that failed after it succeeded, then confirmed by an admin)."""
    done = len(_steps(refund, name))
    return name if done == 0 else f"{name}:{done + 1}"


def _is_topup(refund: Refund) -> bool:
    if refund.payment_id is None:
        return False
    payment = db.session.get(Payment, refund.payment_id)
    return payment is not None and payment.purpose == PaymentPurpose.WALLET_TOPUP


def _reverse_success(refund: Refund) -> None:
    """A refund to a card that failed after it succeeded: the money never reached the
    customer, so the order counts it no more (a top-up's refund is undone by `_undo`)."""
    if _is_topup(refund):
        return
    refund.is_effect_applied = False
    succeeded = _steps(refund, _SUCCEEDED)
    if succeeded:
        journal.reverse(_source(refund), succeeded[-1], _next(refund, "failed"))
    if refund.order_id is not None:
        _settle_order(refund.order_id)


def take_from_wallet(refund: Refund, payment: Payment) -> None:
    """A top-up's refund: the money leaves the wallet first (raises ledger.WalletError,
    nothing written, when it was spent), towards the provider's clearing account, which
    pays it back to the card."""
    assert payment.wallet_id is not None
    step = _next(refund, TAKEN)
    ledger.apply_movement(
        payment.wallet_id,
        -refund.amount_minor,
        refund.currency,
        operation_id=f"refund:{refund.id}" + step.removeprefix(TAKEN),
        kind=LedgerKind.REFUND,
        source=_source(refund),
        step=step,
        against=[
            journal.Leg(Account.clearing(payment.provider), -refund.amount_minor, refund.currency)
        ],
    )
    refund.is_effect_applied = True


def _undo(refund: Refund) -> None:
    """A failed top-up refund: what it took from the wallet goes back (its postings say
    how much: services/movements/effects.py), out of the provider's clearing account."""
    if not refund.is_effect_applied or refund.payment_id is None:
        return
    payment = db.session.get(Payment, refund.payment_id)
    if payment is None or payment.wallet_id is None:
        return
    step = _next(refund, "failed")
    clearing = Account.clearing(payment.provider)
    effects.give_back(
        payment.wallet_id,
        refund.currency,
        operation_id=f"refund:{refund.id}:undone" + step.removeprefix("failed"),
        kind=LedgerKind.REFUND,
        source=_source(refund),
        step=step,
        against=lambda out: [journal.Leg(clearing, out, refund.currency)],
    )
    refund.is_effect_applied = False


def _apply_success(refund: Refund) -> None:
    if refund.provider == WALLET and refund.order_id is not None:
        order = db.session.get(Order, refund.order_id)
        assert order is not None
        target = db.session.scalar(
            select(Wallet.id).where(
                Wallet.customer_id == order.customer_id, Wallet.currency == refund.currency
            )
        )
        assert target is not None
        step = _next(refund, _SUCCEEDED)
        # The books: the wallet's account owes the customer what the refunds account gave.
        ledger.apply_movement(
            target,
            refund.amount_minor,
            refund.currency,
            operation_id=f"refund:{refund.id}" + step.removeprefix(_SUCCEEDED),
            kind=LedgerKind.REFUND,
            source=_source(refund),
            step=step,
        )
        refund.is_effect_applied = True
    elif refund.payment_id is not None:
        payment = db.session.get(Payment, refund.payment_id)
        if payment is not None and payment.purpose == PaymentPurpose.WALLET_TOPUP:
            if not refund.is_effect_applied:
                # Given back when it failed; an admin now says it reached the card.
                take_from_wallet(refund, payment)
            return  # its money left the wallet when it was requested
        refund.is_effect_applied = True
        # The books: what the provider gave back to the card left its clearing account.
        amount, currency = refund.amount_minor, refund.currency
        journal.post(
            _source(refund),
            _next(refund, _SUCCEEDED),
            [
                journal.Leg(Account.REFUNDS, amount, currency),
                journal.Leg(Account.clearing(refund.provider), -amount, currency),
            ],
        )
    order_id = refund.order_id
    if order_id is not None:
        _settle_order(order_id)


def _queue_refund_email(refund: Refund, kind: EmailKind = EmailKind.REFUND) -> None:
    customer_id = db.session.scalar(
        select(Payment.customer_id).where(Payment.id == refund.payment_id)
        if refund.payment_id is not None
        else select(Order.customer_id).where(Order.id == refund.order_id)
    )
    if customer_id is not None:
        queue_email(kind, refund.id, customer_id=customer_id)


def _settle_order(order_id: int) -> None:
    """The order says how much of it went back (its row is locked by the caller)."""
    order = db.session.get(Order, order_id)
    if order is not None:
        effects.settle_order(order)
