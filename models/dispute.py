"""Disputes: a cardholder's bank takes a charge back (or asks about it first). The
provider opens them, not us; their states are Stripe's, plus our needs_review."""

from __future__ import annotations

import enum
from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Model
from models.payment_transition import TransitionSource
from models.types import UTCDateTime, str_enum, utcnow


class DisputeStatus(enum.StrEnum):
    """Stripe's dispute statuses. The `warning_*` ones are inquiries (no money moved yet);
    a chargeback takes the money when it opens (needs_response) and gives it back only
    when it is won."""

    WARNING_NEEDS_RESPONSE = "warning_needs_response"
    WARNING_UNDER_REVIEW = "warning_under_review"
    WARNING_CLOSED = "warning_closed"  # the inquiry ended without a chargeback
    NEEDS_RESPONSE = "needs_response"  # evidence due by evidence_due_by
    UNDER_REVIEW = "under_review"  # evidence submitted; the bank decides
    WON = "won"
    LOST = "lost"
    NEEDS_REVIEW = "needs_review"  # ours: conflicting reports, a person decides

    @property
    def is_open(self) -> bool:
        return self not in DISPUTE_CLOSED


DISPUTE_CLOSED = frozenset({DisputeStatus.WARNING_CLOSED, DisputeStatus.WON, DisputeStatus.LOST})
# While in these the money is out of our hands: the order or top-up effect is withdrawn.
FUNDS_WITHDRAWN = frozenset(
    {DisputeStatus.NEEDS_RESPONSE, DisputeStatus.UNDER_REVIEW, DisputeStatus.LOST}
)
# Waiting for our answer (evidence) by evidence_due_by.
AWAITING_EVIDENCE = frozenset({DisputeStatus.WARNING_NEEDS_RESPONSE, DisputeStatus.NEEDS_RESPONSE})
_OPEN = (
    DisputeStatus.WARNING_NEEDS_RESPONSE,
    DisputeStatus.WARNING_UNDER_REVIEW,
    DisputeStatus.NEEDS_RESPONSE,
    DisputeStatus.UNDER_REVIEW,
)
_ENDS = frozenset({*DISPUTE_CLOSED, DisputeStatus.NEEDS_REVIEW})
# Forward only: an inquiry may become a chargeback, evidence moves it to review, a
# decision closes it; an older event never takes it back (under_review -> needs_response
# is not a move). A closed dispute changes only through review.
DISPUTE_TRANSITIONS: dict[DisputeStatus, frozenset[DisputeStatus]] = {
    DisputeStatus.WARNING_NEEDS_RESPONSE: frozenset(
        {DisputeStatus.WARNING_UNDER_REVIEW, *_OPEN[2:], *_ENDS}
    ),
    DisputeStatus.WARNING_UNDER_REVIEW: frozenset({*_OPEN[2:], *_ENDS}),
    DisputeStatus.NEEDS_RESPONSE: frozenset({DisputeStatus.UNDER_REVIEW, *_ENDS}),
    DisputeStatus.UNDER_REVIEW: frozenset(_ENDS),
    DisputeStatus.WARNING_CLOSED: frozenset({DisputeStatus.NEEDS_REVIEW}),
    DisputeStatus.WON: frozenset({DisputeStatus.NEEDS_REVIEW}),
    DisputeStatus.LOST: frozenset({DisputeStatus.NEEDS_REVIEW}),
    DisputeStatus.NEEDS_REVIEW: frozenset({DisputeStatus.WON, DisputeStatus.LOST}),
}
for _status, _targets in DISPUTE_TRANSITIONS.items():  # no self-moves in the table
    assert _status not in _targets, _status


class Dispute(Model):
    """A dispute of one of our payments, recorded from the provider's events (UNIQUE by
    the provider's id: a redelivery or a later event finds the same row)."""

    __tablename__ = "disputes"
    __table_args__ = (
        UniqueConstraint("provider", "provider_dispute_id"),
        Index("ix_disputes_status", "status"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    provider: Mapped[str] = mapped_column(String(32))
    provider_dispute_id: Mapped[str] = mapped_column(String(255))
    payment_id: Mapped[int] = mapped_column(ForeignKey("payments.id"), index=True)
    amount_minor: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    status: Mapped[DisputeStatus] = mapped_column(
        str_enum(DisputeStatus, "dispute_status", length=24)
    )
    reason: Mapped[str] = mapped_column(String(64), default="")  # the bank's, e.g. fraudulent
    evidence_due_by: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The effect withdrawn from the shop (order disputed, wallet debited) and how much of
    # it the wallet could give (a spent top-up gives less than the dispute takes).
    is_effect_applied: Mapped[bool] = mapped_column(default=False)
    # An inquiry (Stripe's case_type "inquiry", the warning_* statuses): the bank asks, no
    # money moves, even when it closes `lost`. Once escalated to a chargeback, never again.
    is_inquiry: Mapped[bool] = mapped_column(default=False)
    withdrawn_minor: Mapped[int] = mapped_column(BigInteger, default=0)
    withdrawals: Mapped[int] = mapped_column(default=0)  # how many times (ledger ids)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)

    @property
    def holds_funds(self) -> bool:
        return holds_funds(self.status, self.is_inquiry)


def holds_funds(status: DisputeStatus, is_inquiry: bool) -> bool:
    """Whether the provider holds a dispute's money now: a chargeback in FUNDS_WITHDRAWN
    (an inquiry never withdraws any, whatever its status)."""
    return status in FUNDS_WITHDRAWN and not is_inquiry


class DisputeTransition(Model):
    """The dispute's audit trail: one row per status change, never updated."""

    __tablename__ = "dispute_transitions"

    id: Mapped[int] = mapped_column(primary_key=True)
    dispute_id: Mapped[int] = mapped_column(ForeignKey("disputes.id"), index=True)
    from_status: Mapped[DisputeStatus | None] = mapped_column(
        str_enum(DisputeStatus, "dispute_from_status", length=24)
    )
    to_status: Mapped[DisputeStatus] = mapped_column(
        str_enum(DisputeStatus, "dispute_to_status", length=24)
    )
    source: Mapped[TransitionSource] = mapped_column(
        str_enum(TransitionSource, "dispute_transition_source")
    )
    reason: Mapped[str] = mapped_column(String(500), default="")
    actor: Mapped[str | None] = mapped_column(String(254))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
