"""A dispute's state machine (services/movements/machine.py, Stripe's statuses as the
table) and its effect, in the caller's transaction under the one lock order.

The effect follows the dispute's status, not the event that carried it, so events in
any order end where the newest status says: while the money is out of our hands
(`Dispute.holds_funds`: a chargeback in models.FUNDS_WITHDRAWN; an inquiry moves no
money, even when it closes lost) an order is `disputed` and a top-up's credit is taken back
from the wallet (what is left of it: it may have been spent); a dispute won gives back
exactly what it took (services/movements/effects.py), and the order is paid again.
"""

from __future__ import annotations

from models import (
    DISPUTE_TRANSITIONS,
    Account,
    Dispute,
    DisputeStatus,
    DisputeTransition,
    EmailKind,
    LedgerKind,
    OrderStatus,
    Payment,
    PaymentPurpose,
    Source,
    SourceKind,
    TransitionSource,
)
from services.books import journal
from services.movements import effects, machine
from services.movements.locks import locked_order
from services.notifications.outbox import queue_email
from services.platform.locales import money_text

TABLE: machine.Table[DisputeStatus] = machine.Table(
    noun="dispute",
    transitions=DISPUTE_TRANSITIONS,
    final=frozenset({DisputeStatus.WON, DisputeStatus.LOST, DisputeStatus.WARNING_CLOSED}),
    review=DisputeStatus.NEEDS_REVIEW,
    record=DisputeTransition,
    owner="dispute_id",
    describe=lambda d: f"payment {d.payment_id}, {d.provider} {d.provider_dispute_id}",
)


def record_creation(dispute: Dispute, source: TransitionSource, reason: str, actor: str) -> None:
    machine.record(TABLE, dispute, None, dispute.status, source, reason, actor)


def move_dispute(
    dispute: Dispute,
    payment: Payment,
    to: DisputeStatus,
    *,
    source: TransitionSource,
    reason: str,
    actor: str | None = None,
) -> bool:
    """Move a locked dispute (its payment locked first) and bring its effect in line."""
    taken = machine.step(TABLE, dispute, to, source=source, reason=reason, actor=actor)
    if taken is None:
        return False
    settle_effect(dispute, payment, source)
    if taken.to == DisputeStatus.NEEDS_REVIEW:
        queue_email(EmailKind.DISPUTE_ALERT, dispute.id)  # once per dispute
    return True


def settle_effect(
    dispute: Dispute, payment: Payment, source: TransitionSource = TransitionSource.WEBHOOK
) -> str | None:
    """Withdraw or give back the payment's effect as the dispute's status says (review
    keeps it as it is), recorded as `source`'s (the event's, or the admin's decision);
    what changed, for the audit trail, or None."""
    if dispute.status == DisputeStatus.NEEDS_REVIEW:
        return None
    should_withdraw = dispute.holds_funds
    if should_withdraw == dispute.is_effect_applied:
        return None
    what = _withdraw(dispute, payment) if should_withdraw else _give_back(dispute, payment)
    machine.record(TABLE, dispute, dispute.status, dispute.status, source, what, None)
    return what


def _source(dispute: Dispute) -> Source:
    return Source(SourceKind.DISPUTE, dispute.id)


def _withdraw(dispute: Dispute, payment: Payment) -> str:
    dispute.is_effect_applied = True
    dispute.withdrawals += 1
    amount = money_text(dispute.amount_minor, dispute.currency)
    if payment.purpose == PaymentPurpose.WALLET_TOPUP and payment.wallet_id is not None:
        # At most what the top-up's credit still holds (its refunds, or a reversal,
        # may have taken it already): never the wallet's other money.
        taken = effects.take(
            payment.wallet_id,
            min(dispute.amount_minor, max(0, effects.held_by_topup(payment.id, payment.wallet_id))),
            dispute.currency,
            operation_id=f"dispute:{dispute.id}:{dispute.withdrawals}:withdrawn",
            kind=LedgerKind.DISPUTE,
            source=_source(dispute),
            step=f"withdrawn:{dispute.withdrawals}",
            against=lambda taken: _withdrawal(dispute, payment, taken),
        )
        dispute.withdrawn_minor = taken
        short = dispute.amount_minor - taken
        return f"funds withdrawn: {money_text(taken, dispute.currency)} taken from the wallet" + (
            f"; {money_text(short, dispute.currency)} of the {amount} had been spent"
            if short
            else ""
        )
    order = locked_order(payment.order_id)
    dispute.withdrawn_minor = dispute.amount_minor
    journal.post(
        _source(dispute), f"withdrawn:{dispute.withdrawals}", _withdrawal(dispute, payment, 0)
    )
    if order is not None and effects.settle_order(order) == OrderStatus.DISPUTED:
        return f"funds withdrawn ({amount}): order {order.id} disputed"
    return f"funds withdrawn ({amount})"


def _withdrawal(dispute: Dispute, payment: Payment, from_wallet: int) -> list[journal.Leg]:
    """The books, but for a wallet's leg: the provider took the whole amount from what it
    holds for us; what did not come out of the wallet (`from_wallet`: what was left of a
    top-up's credit) is the dispute's loss."""
    currency, amount = dispute.currency, dispute.amount_minor
    return [
        journal.Leg(Account.DISPUTES, amount - from_wallet, currency),
        journal.Leg(Account.clearing(payment.provider), -amount, currency),
    ]


def _give_back(dispute: Dispute, payment: Payment) -> str:
    dispute.is_effect_applied = False
    n = dispute.withdrawals
    if payment.purpose == PaymentPurpose.WALLET_TOPUP and payment.wallet_id is not None:
        # The withdrawal's mirror: what the wallet gave is what it gets back.
        given = effects.give_back(
            payment.wallet_id,
            dispute.currency,
            operation_id=f"dispute:{dispute.id}:{dispute.withdrawals}:reinstated",
            kind=LedgerKind.DISPUTE,
            source=_source(dispute),
            step=f"reinstated:{n}",
            against=lambda given: [
                journal.Leg(leg.account, -leg.amount_minor, leg.currency)
                for leg in _withdrawal(dispute, payment, given)
            ],
        )
        dispute.withdrawn_minor = 0
        return f"funds reinstated: {money_text(given, dispute.currency)} back in the wallet"
    journal.reverse(_source(dispute), f"withdrawn:{n}", f"reinstated:{n}")
    dispute.withdrawn_minor = 0
    order = locked_order(payment.order_id)
    if order is not None and order.status == OrderStatus.DISPUTED:
        # Paid again, or partly or fully refunded as it was before the dispute.
        return f"funds reinstated: order {order.id} {effects.settle_order(order).value} again"
    return "funds reinstated"
