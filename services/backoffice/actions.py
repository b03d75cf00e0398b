"""What an admin may do to payments, refunds and disputes: ask the provider now, or
decide with a reason."""

from __future__ import annotations

from extensions import db
from models import (
    AdminUser,
    DisputeStatus,
    Payment,
    PaymentStatus,
    RefundStatus,
    TransitionSource,
)
from models.types import utcnow
from services.disputes.state import move_dispute
from services.movements import lifecycle
from services.movements.locks import lock_dispute, lock_payment, lock_refund
from services.payments.kind import CHARGE
from services.payments.state import move, reverse_effect
from services.platform.errors import ClientError, NotFoundError
from services.refunds.state import move_refund
from services.wallet.ledger import WalletError

RESOLVABLE = (PaymentStatus.UNKNOWN, PaymentStatus.NEEDS_REVIEW)


def reconcile_now(payment_id: int) -> bool:
    """Enqueue one lookup on the payment's provider queue (a second click adds nothing)."""
    payment = db.session.get(Payment, payment_id)
    if payment is None:
        raise NotFoundError(f"no payment {payment_id}")
    if payment.status not in RESOLVABLE:
        raise ClientError(f"payment {payment_id} is {payment.status.value}", status=409)
    if payment.status == PaymentStatus.NEEDS_REVIEW:
        raise ClientError("a payment under review is resolved by hand, with a reason", status=409)
    job_id = CHARGE.lookup_job_id(payment.id, payment.reconcile_attempts, "-now")
    # The next lookup is this one: the page says "due now" until it has run and set
    # the one after (a later time, or the open circuit's retry time).
    payment.next_reconcile_at = utcnow()
    db.session.commit()
    return lifecycle.enqueue_lookup(CHARGE, payment.provider, payment.id, job_id=job_id)


def resolve(payment_id: int, outcome: str, reason: str, admin: AdminUser) -> str:
    """Move an unknown or needs-review payment to succeeded/failed, recording who and why.

    The payment's effect follows the decision in the same transaction: succeeded pays
    the order or credits the wallet (once), failed reopens the order or takes the
    credit back. Raises ClientError (nothing written) when the credit was already
    spent. Returns what happened, for the admin. Commits.
    """
    _check_decision(outcome, reason)
    payment = lock_payment(payment_id)
    if payment is None:
        db.session.rollback()
        raise NotFoundError(f"no payment {payment_id}")
    if payment.status not in RESOLVABLE:
        db.session.rollback()
        raise ClientError(f"payment {payment_id} is {payment.status.value}", status=409)
    undone = None
    if outcome == PaymentStatus.FAILED:
        try:
            undone = reverse_effect(payment)
        except WalletError as exc:
            db.session.rollback()
            raise ClientError(
                f"payment {payment_id} cannot be marked failed: its wallet credit was already "
                f"spent ({exc}). Nothing was changed; refund the customer instead.",
                code="credit_spent",
                status=409,
            ) from None
    move(
        payment,
        PaymentStatus(outcome),
        source=TransitionSource.ADMIN,
        reason=(reason.strip()[:400] + (f" ({undone})" if undone else "")),
        actor=admin.email,
    )
    payment.next_reconcile_at = None
    db.session.commit()
    return f"payment {payment_id} is {payment.status.value}" + (f"; {undone}" if undone else "")


def decide_refund(refund_id: int, outcome: str, reason: str, admin: AdminUser) -> str:
    """Take a refund out of review: succeeded (the money went back) or failed (it did not;
    a top-up's money returns to the wallet), recording who and why; the effect follows in
    the same transaction. Raises ClientError, nothing written. Commits."""
    _check_decision(outcome, reason)
    refund = lock_refund(refund_id)
    if refund is None:
        db.session.rollback()
        raise NotFoundError(f"no refund {refund_id}")
    if refund.status != RefundStatus.NEEDS_REVIEW:
        db.session.rollback()
        raise ClientError(f"refund {refund_id} is {refund.status.value}", status=409)
    move_refund(
        refund,
        RefundStatus(outcome),
        source=TransitionSource.ADMIN,
        reason=reason.strip()[:400],
        actor=admin.email,
    )
    db.session.commit()
    return f"refund {refund_id} is {refund.status.value}"


def decide_dispute(dispute_id: int, outcome: str, reason: str, admin: AdminUser) -> str:
    """Take a dispute out of review: won (the money stays with the shop) or lost (the bank
    took it), as the provider's dashboard says, recording who and why; the payment's
    effect follows in the same transaction. Raises ClientError, nothing written. Commits."""
    _check_decision(outcome, reason, ("won", "lost"))
    dispute = lock_dispute(dispute_id)
    if dispute is None:
        db.session.rollback()
        raise NotFoundError(f"no dispute {dispute_id}")
    if dispute.status != DisputeStatus.NEEDS_REVIEW:
        db.session.rollback()
        raise ClientError(f"dispute {dispute_id} is {dispute.status.value}", status=409)
    payment = db.session.get(Payment, dispute.payment_id)
    assert payment is not None  # locked with the dispute (a foreign key)
    move_dispute(
        dispute,
        payment,
        DisputeStatus(outcome),
        source=TransitionSource.ADMIN,
        reason=reason.strip()[:400],
        actor=admin.email,
    )
    db.session.commit()
    return f"dispute {dispute_id} is {dispute.status.value}"


def _check_decision(
    outcome: str, reason: str, outcomes: tuple[str, ...] = ("succeeded", "failed")
) -> None:
    """An admin's decision says what happened and why (ClientError otherwise)."""
    if outcome not in outcomes:
        raise ClientError(f"outcome must be {' or '.join(outcomes)}")
    if len(reason.strip()) < 5:
        raise ClientError("a reason (at least 5 characters) is required", code="reason_required")
