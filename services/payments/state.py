"""The one state machine of payments: every status change goes through `move`."""

from __future__ import annotations

from models import (
    Account,
    EmailKind,
    LedgerKind,
    OrderStatus,
    Payment,
    PaymentPurpose,
    PaymentStatus,
    Source,
    SourceKind,
    TransitionSource,
)
from services.books import journal
from services.movements import effects, machine
from services.movements.locks import locked_order
from services.notifications.outbox import queue_email
from services.payments import settling
from services.payments.table import RESOLVED, TABLE, log_context
from services.platform.locales import money_text
from services.wallet import ledger

__all__ = ["RESOLVED", "TABLE", "log_context", "move", "note", "reverse_effect"]

CREATION_REASON = "payment created"


def record_creation(payment: Payment, source: TransitionSource) -> None:
    machine.record(TABLE, payment, None, PaymentStatus.PENDING, source, CREATION_REASON, None)


def move(
    payment: Payment,
    to: PaymentStatus,
    *,
    source: TransitionSource,
    reason: str = "",
    actor: str | None = None,
    may_reverse: bool = False,
) -> bool:
    """Move a locked payment to `to` and record why, in the caller's transaction
    (the rules: services/movements/machine.py). Returns True when the status changed.
    Succeeding pays the order or credits the wallet in the same transaction, in the
    success's one statement (services/payments/settling.py). `may_reverse`: the
    provider takes back the success it reported (its money never arrived): the payment
    fails and its effect and entry are reversed exactly, as an admin's resolution does."""
    taken = machine.decide(
        TABLE, payment, to, source=source, reason=reason, actor=actor, may_reverse=may_reverse
    )
    if taken is None:
        return False
    if taken.is_reversal:
        undone = reverse_effect(payment)
        taken = machine.Step(
            taken.was, taken.to, True, f"{taken.reason}; {undone or 'nothing to undo'}"
        )
    if taken.to != PaymentStatus.SUCCEEDED:
        machine.take(TABLE, payment, taken, source=source, actor=actor)
    elif settling.succeed(payment, taken, source, actor):
        return True  # its statement wrote the receipt too
    else:
        machine.take(TABLE, payment, taken, source=source, actor=actor)
        _succeeded_without_effect(payment, source)
    _queue_email(payment)
    return True


EMAILS = {
    PaymentStatus.SUCCEEDED: EmailKind.RECEIPT,
    PaymentStatus.FAILED: EmailKind.PAYMENT_FAILED,
    PaymentStatus.NEEDS_REVIEW: EmailKind.REVIEW_ALERT,
}


def _queue_email(payment: Payment) -> None:
    """The email the payment's new state sends, written with it (the outbox; once per
    payment and kind). A success that went on to review sends the alert, no receipt."""
    kind = EMAILS.get(payment.status)
    if kind is None:
        return
    to_customer = None if kind == EmailKind.REVIEW_ALERT else payment.customer_id
    queue_email(kind, payment.id, customer_id=to_customer)


def note(
    payment: Payment, *, source: TransitionSource, reason: str, actor: str | None = None
) -> None:
    """Record a fact about a payment that does not change its status (e.g. an admin's note)."""
    machine.record(TABLE, payment, payment.status, payment.status, source, reason, actor)


def _succeeded_without_effect(payment: Payment, source: TransitionSource) -> None:
    """A success whose effect the statement did not apply: none was due (it stands
    already: an admin confirms a success that a conflict had sent to review), or money
    was taken that cannot pay its order (paid by another payment first) or credit its
    wallet: a person must refund it (succeeded -> needs_review, through the state
    machine like every change)."""
    if payment.is_effect_applied:
        return
    if payment.purpose == PaymentPurpose.WALLET_TOPUP:
        why = f"its wallet {payment.wallet_id} could not be credited in {payment.currency}"
    else:
        order = locked_order(payment.order_id)
        if order is None:
            return  # nothing to pay
        why = f"order {order.id} was already {order.status.value}"
        if order.status == OrderStatus.OPEN:
            why = f"order {order.id} has a refund or a dispute applied while open"
    move(payment, PaymentStatus.NEEDS_REVIEW, source=source, reason=why)


def reverse_effect(payment: Payment) -> str | None:
    """Undo what the payment's success did, in the caller's transaction; say what was undone.

    The wallet credit is taken back through its own ledger entry (UNIQUE operation
    id); the order is open again. Raises ledger.InsufficientFundsError (nothing
    written by it) when the credit was already spent.
    """
    if not payment.is_effect_applied:
        return None
    generation = payment.effect_reversals + 1
    undone: str | None = None
    source = Source(SourceKind.PAYMENT, payment.id)
    posted = journal.success_step(payment.effect_reversals)
    reversal = f"reversed:{generation}"
    if payment.purpose == PaymentPurpose.WALLET_TOPUP and payment.wallet_id is not None:
        # Only what is still there: a refund or a chargeback of the top-up already took
        # its part from the wallet, and must not be taken twice.
        left = max(0, effects.held_by_topup(payment.id, payment.wallet_id))
        if left > 0:
            # The success's entry, mirrored for what is left: the provider's clearing
            # account gives back what the wallet no longer holds for the customer.
            ledger.apply_movement(
                payment.wallet_id,
                -left,
                payment.currency,
                operation_id=f"reversal:{payment.id}:{generation}",
                kind=LedgerKind.REVERSAL,
                source=source,
                step=reversal,
                against=[journal.Leg(Account.clearing(payment.provider), -left, payment.currency)],
            )
        undone = f"wallet credit of {money_text(left, payment.currency)} taken back" + (
            f" (the rest, {money_text(payment.amount_minor - left, payment.currency)}, "
            "was refunded or disputed already)"
            if left < payment.amount_minor
            else ""
        )
    else:
        journal.reverse(source, posted, reversal)
        payment.is_effect_applied = False
        order = locked_order(payment.order_id)
        if order is not None and effects.settle_order(order) == OrderStatus.OPEN:
            undone = f"order {order.id} open again"
    payment.is_effect_applied = False
    payment.effect_reversals = generation
    return undone
