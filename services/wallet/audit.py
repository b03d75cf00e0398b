"""The wallet audit: every balance equals the sum of its ledger; no operation id twice;
and the ledger agrees with the payments: a top-up's credits add up to its amount
exactly while its success stands (zero otherwise), and an order is paid by exactly
one thing (one card payment's success, or one wallet debit); a refund's and a
dispute's ledger entries agree with their state; and the books (the journal's postings) say
the same of every wallet and order."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from typing import Any

from redis.exceptions import RedisError
from sqlalchemy import func, select

from extensions import db, redis_client
from models import (
    PAID_LIKE,
    Dispute,
    DisputeStatus,
    LedgerEntry,
    LedgerKind,
    Order,
    Payment,
    PaymentPurpose,
    PaymentStatus,
    Refund,
    RefundStatus,
    SourceKind,
    Wallet,
)
from models.dispute import holds_funds
from models.refund import WALLET
from models.types import utcnow
from services.books import rebuild
from services.platform.locales import money_text

log = logging.getLogger(__name__)
LAST_RESULT_KEY = "wallet:audit:last"  # read by the admin dashboard
# A payment in these states may or may not have its effect: a person is deciding.
UNDECIDED = (PaymentStatus.NEEDS_REVIEW,)


@dataclass
class AuditResult:
    checked_wallets: int
    mismatches: list[str] = field(default_factory=list)
    at: str = ""

    @property
    def is_ok(self) -> bool:
        return not self.mismatches


def audit_wallets() -> AuditResult:
    """Check every wallet and remember the result in Redis (best effort)."""
    ledger_sum = (
        select(LedgerEntry.wallet_id, func.sum(LedgerEntry.amount_minor).label("total"))
        .group_by(LedgerEntry.wallet_id)
        .subquery()
    )
    rows = db.session.execute(
        select(
            Wallet.id, Wallet.currency, Wallet.balance_minor, func.coalesce(ledger_sum.c.total, 0)
        )
        .outerjoin(ledger_sum, ledger_sum.c.wallet_id == Wallet.id)
        .order_by(Wallet.id)
    ).all()
    result = AuditResult(checked_wallets=len(rows), at=utcnow().isoformat())
    for wallet_id, currency, balance, total in rows:
        if balance != total:
            result.mismatches.append(
                f"wallet {wallet_id} ({currency}): balance {money_text(balance, currency)} != "
                f"ledger sum {money_text(total, currency)}"
            )
        if balance < 0:
            result.mismatches.append(
                f"wallet {wallet_id} ({currency}): negative balance {money_text(balance, currency)}"
            )
    duplicates = db.session.execute(
        select(LedgerEntry.operation_id, func.count())
        .group_by(LedgerEntry.operation_id)
        .having(func.count() > 1)
    ).all()
    for operation_id, count in duplicates:
        result.mismatches.append(f"operation id {operation_id} appears {count} times")
    result.mismatches.extend(_topups_against_ledger())
    result.mismatches.extend(_orders_against_payments())
    result.mismatches.extend(_refunds_against_ledger())
    result.mismatches.extend(_disputes_against_ledger())
    result.mismatches.extend(_postings_off_their_wallet())
    # The books tell the same story (services/books/rebuild.py).
    result.mismatches.extend(rebuild.wallets()[1] + rebuild.orders()[1])
    db.session.rollback()
    try:
        redis_client.client.set(LAST_RESULT_KEY, json.dumps(asdict(result)))
    except RedisError as exc:
        log.warning("could not store the wallet audit result in Redis: %s", exc)
    return result


def _net_by_source(kind: SourceKind, *where: Any) -> Any:
    """Each movement's postings of one source kind, summed: (source_id, net)."""
    return (
        select(LedgerEntry.source_id, func.sum(LedgerEntry.amount_minor).label("net"))
        .where(LedgerEntry.source_kind == kind, *where)
        .group_by(LedgerEntry.source_id)
        .subquery()
    )


def _topups_against_ledger() -> list[str]:
    credited = _net_by_source(
        SourceKind.PAYMENT, LedgerEntry.kind.in_((LedgerKind.TOPUP, LedgerKind.REVERSAL))
    )
    # What the top-up's refunds took from the wallet (and gave back when they failed).
    refunded = (
        select(Refund.payment_id, func.sum(LedgerEntry.amount_minor).label("net"))
        .join(Refund, LedgerEntry.source_id == Refund.id)
        .where(
            LedgerEntry.source_kind == SourceKind.REFUND,
            LedgerEntry.kind == LedgerKind.REFUND,
            Refund.payment_id.is_not(None),
        )
        .group_by(Refund.payment_id)
        .subquery()
    )
    # ... and what its chargebacks took (and gave back when won).
    disputed = (
        select(Dispute.payment_id, func.sum(LedgerEntry.amount_minor).label("net"))
        .join(Dispute, LedgerEntry.source_id == Dispute.id)
        .where(
            LedgerEntry.source_kind == SourceKind.DISPUTE, LedgerEntry.kind == LedgerKind.DISPUTE
        )
        .group_by(Dispute.payment_id)
        .subquery()
    )
    rows = db.session.execute(
        select(
            Payment.id,
            Payment.status,
            Payment.amount_minor,
            Payment.currency,
            Payment.is_effect_applied,
            func.coalesce(credited.c.net, 0),
            func.coalesce(refunded.c.net, 0) + func.coalesce(disputed.c.net, 0),
        )
        .outerjoin(credited, credited.c.source_id == Payment.id)
        .outerjoin(refunded, refunded.c.payment_id == Payment.id)
        .outerjoin(disputed, disputed.c.payment_id == Payment.id)
        .where(Payment.purpose == PaymentPurpose.WALLET_TOPUP)
        .order_by(Payment.id)
    ).all()
    problems = []
    for payment_id, status, amount, currency, is_applied, net, refunds_net in rows:
        # Per top-up: its credit, minus its refunds and chargebacks, minus its reversals,
        # is what it still holds in the wallet: all of it less the refunds and
        # chargebacks while applied, nothing once undone.
        holds = net + refunds_net
        expected = amount + refunds_net if is_applied else 0
        if holds != expected or holds < 0:
            problems.append(
                f"top-up payment {payment_id} ({status.value}): credit minus refunds and "
                f"chargebacks minus reversals is {money_text(holds, currency)}, expected "
                f"{money_text(expected, currency)}"
            )
        if is_applied != (status == PaymentStatus.SUCCEEDED) and status not in UNDECIDED:
            problems.append(
                f"top-up payment {payment_id} is {status.value} but its credit is "
                f"{'in place' if is_applied else 'missing'}"
            )
    return problems


def _orders_against_payments() -> list[str]:
    applied = (
        select(Payment.order_id, func.count().label("paid_by"))
        .where(Payment.is_effect_applied.is_(True), Payment.order_id.is_not(None))
        .group_by(Payment.order_id)
        .subquery()
    )
    debited = _net_by_source(SourceKind.ORDER, LedgerEntry.kind == LedgerKind.ORDER)
    rows = db.session.execute(
        select(
            Order.id,
            Order.status,
            Order.currency,
            func.coalesce(applied.c.paid_by, 0),
            func.coalesce(debited.c.net, 0),
        )
        .outerjoin(applied, applied.c.order_id == Order.id)
        .outerjoin(debited, debited.c.source_id == Order.id)
        .order_by(Order.id)
    ).all()
    problems = []
    for order_id, status, currency, card_payments, wallet_net in rows:
        paid_by = card_payments + (1 if wallet_net else 0)
        if (status in PAID_LIKE) != (paid_by == 1) or paid_by > 1:
            problems.append(
                f"order {order_id} is {status.value}, paid by {card_payments} card payment(s) "
                f"and {money_text(-wallet_net, currency)} from a wallet"
            )
    return problems


def _refunds_against_ledger() -> list[str]:
    """A top-up's refund took its money out of the wallet while it stands; an order paid
    from the wallet got its refund back into the wallet once it succeeded."""
    moved = _net_by_source(SourceKind.REFUND, LedgerEntry.kind == LedgerKind.REFUND)
    rows = db.session.execute(
        select(
            Refund.id,
            Refund.status,
            Refund.provider,
            Refund.amount_minor,
            Refund.currency,
            Refund.is_effect_applied,
            Payment.purpose,
            func.coalesce(moved.c.net, 0),
        )
        .outerjoin(Payment, Payment.id == Refund.payment_id)
        .outerjoin(moved, moved.c.source_id == Refund.id)
        .order_by(Refund.id)
    ).all()
    problems = []
    for refund_id, status, provider, amount, currency, is_applied, purpose, net in rows:
        if purpose == PaymentPurpose.WALLET_TOPUP:
            expected, should_apply = -amount, status != RefundStatus.FAILED
        elif provider == WALLET:
            expected, should_apply = amount, status == RefundStatus.SUCCEEDED
        else:
            expected, should_apply = 0, status == RefundStatus.SUCCEEDED
        if net != (expected if is_applied else 0):
            problems.append(
                f"refund {refund_id} ({status.value}): ledger moved {money_text(net, currency)}"
            )
        if is_applied != should_apply and status != RefundStatus.NEEDS_REVIEW:
            problems.append(
                f"refund {refund_id} is {status.value} but its effect is "
                f"{'in place' if is_applied else 'missing'}"
            )
    return problems


def _disputes_against_ledger() -> list[str]:
    """A dispute's postings took what it says it withdrew while its effect stands, and
    gave all of it back once it does not (never more than it took)."""
    moved = _net_by_source(SourceKind.DISPUTE, LedgerEntry.kind == LedgerKind.DISPUTE)
    rows = db.session.execute(
        select(
            Dispute.id,
            Dispute.status,
            Dispute.currency,
            Dispute.withdrawn_minor,
            Dispute.is_effect_applied,
            Dispute.is_inquiry,
            Payment.purpose,
            func.coalesce(moved.c.net, 0),
        )
        .join(Payment, Payment.id == Dispute.payment_id)
        .outerjoin(moved, moved.c.source_id == Dispute.id)
        .order_by(Dispute.id)
    ).all()
    problems = []
    for dispute_id, status, currency, withdrawn, is_applied, is_inquiry, purpose, net in rows:
        is_topup = purpose == PaymentPurpose.WALLET_TOPUP
        expected = -withdrawn if is_applied and is_topup else 0
        if net != expected:
            problems.append(
                f"dispute {dispute_id} ({status.value}): ledger moved {money_text(net, currency)}, "
                f"expected {money_text(expected, currency)}"
            )
        holds = holds_funds(status, is_inquiry)
        if is_applied != holds and status != DisputeStatus.NEEDS_REVIEW:
            problems.append(
                f"dispute {dispute_id} is {status.value} but its funds are "
                f"{'withdrawn' if is_applied else 'not withdrawn'}"
            )
    return problems


def _postings_off_their_wallet() -> list[str]:
    """A movement posts only on its own wallet: a top-up's (its refunds' and disputes'
    too) or the one that paid the order (a wallet refund of that order too)."""
    topup = select(Payment.id.label("payment_id"), Payment.wallet_id).subquery()
    refund_wallet = (
        select(Refund.id, func.coalesce(topup.c.wallet_id, _order_wallet(Refund.order_id)))
        .outerjoin(topup, topup.c.payment_id == Refund.payment_id)
        .subquery()
    )
    dispute_wallet = (
        select(Dispute.id, topup.c.wallet_id)
        .join(topup, topup.c.payment_id == Dispute.payment_id)
        .subquery()
    )
    expected = {
        SourceKind.PAYMENT: select(topup.c.payment_id, topup.c.wallet_id),
        SourceKind.REFUND: select(*refund_wallet.c),
        SourceKind.DISPUTE: select(*dispute_wallet.c),
    }
    problems = []
    for kind, owners in expected.items():
        owner = owners.subquery()
        id_col, wallet_col = owner.c
        rows = db.session.execute(
            select(LedgerEntry.id, LedgerEntry.source_id, LedgerEntry.wallet_id, wallet_col)
            .join(owner, id_col == LedgerEntry.source_id)
            .where(
                LedgerEntry.source_kind == kind,
                wallet_col.is_not(None),
                wallet_col != LedgerEntry.wallet_id,
            )
            .order_by(LedgerEntry.id)
        ).all()
        problems += [
            f"ledger entry {entry} of {kind.value} {source} is on wallet {wallet}, "
            f"the {kind.value}'s is wallet {own}"
            for entry, source, wallet, own in rows
        ]
    return problems


def _order_wallet(order_id: Any) -> Any:
    """The wallet whose ORDER posting paid the order (None: none did)."""
    return (
        select(func.min(LedgerEntry.wallet_id))
        .where(
            LedgerEntry.source_kind == SourceKind.ORDER,
            LedgerEntry.source_id == order_id,
            LedgerEntry.kind == LedgerKind.ORDER,
        )
        .scalar_subquery()
    )


def last_audit() -> dict[str, object] | None:
    try:
        raw = redis_client.client.get(LAST_RESULT_KEY)
    except RedisError:
        return None
    return json.loads(raw) if raw else None
