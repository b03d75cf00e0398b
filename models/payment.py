from __future__ import annotations

import enum
import uuid
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Float,
    ForeignKey,
    Index,
    String,
    UniqueConstraint,
    Uuid,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from models.base import Model
from models.types import UTCDateTime, str_enum, utcnow

if TYPE_CHECKING:
    from models.customer import Customer


class PaymentStatus(enum.StrEnum):
    """Where a payment is. `unknown` is a state, not an error: only the provider can resolve it."""

    PENDING = "pending"  # intent recorded; the provider may not have been asked yet
    UNKNOWN = "unknown"  # asked, but the outcome is not known (timeout, 5xx, reset)
    # The provider waits for the customer to authenticate (3-D Secure); not final.
    REQUIRES_ACTION = "requires_action"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    NEEDS_REVIEW = "needs_review"  # a person must decide; the reason is in the transitions

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATUSES


FINAL_STATUSES = frozenset(
    {PaymentStatus.SUCCEEDED, PaymentStatus.FAILED, PaymentStatus.NEEDS_REVIEW}
)
# Decided, with nothing left to look into (review is final for the machines, not for
# the person who decides it): only these let retention clear a payment's records.
SETTLED_STATUSES = frozenset({PaymentStatus.SUCCEEDED, PaymentStatus.FAILED})

# The only moves a payment may make. Terminal states never regress; a
# conflicting terminal report goes to needs_review, which only an admin leaves.
ALLOWED_TRANSITIONS: dict[PaymentStatus, frozenset[PaymentStatus]] = {
    PaymentStatus.PENDING: frozenset(
        {
            PaymentStatus.UNKNOWN,
            PaymentStatus.REQUIRES_ACTION,
            PaymentStatus.SUCCEEDED,
            PaymentStatus.FAILED,
            PaymentStatus.NEEDS_REVIEW,
        }
    ),
    PaymentStatus.UNKNOWN: frozenset(
        {
            PaymentStatus.REQUIRES_ACTION,
            PaymentStatus.SUCCEEDED,
            PaymentStatus.FAILED,
            PaymentStatus.NEEDS_REVIEW,
        }
    ),
    # Authenticated or not, by the customer's return, a webhook or the abandonment
    # sweep's cancel (whose lost answer is unknown).
    PaymentStatus.REQUIRES_ACTION: frozenset(
        {
            PaymentStatus.UNKNOWN,
            PaymentStatus.SUCCEEDED,
            PaymentStatus.FAILED,
            PaymentStatus.NEEDS_REVIEW,
        }
    ),
    PaymentStatus.SUCCEEDED: frozenset({PaymentStatus.NEEDS_REVIEW}),
    PaymentStatus.FAILED: frozenset({PaymentStatus.NEEDS_REVIEW}),
    PaymentStatus.NEEDS_REVIEW: frozenset({PaymentStatus.SUCCEEDED, PaymentStatus.FAILED}),
}


# An order's payment that is under way or done: at most one per order (below).
ACTIVE_ORDER_STATUSES = (
    PaymentStatus.PENDING,
    PaymentStatus.UNKNOWN,
    PaymentStatus.REQUIRES_ACTION,
    PaymentStatus.SUCCEEDED,
    PaymentStatus.NEEDS_REVIEW,
)
ACTIVE_ORDER_PAYMENT_SQL = f"status IN ({', '.join(repr(s.value) for s in ACTIVE_ORDER_STATUSES)})"


class PaymentPurpose(enum.StrEnum):
    ORDER = "order"
    WALLET_TOPUP = "wallet_topup"


class Payment(Model):
    """One attempt to move money through a provider, identified by its idempotency key.

    The row is committed (status pending) before any provider call: it is the intent.
    """

    __tablename__ = "payments"
    __table_args__ = (
        UniqueConstraint("provider", "provider_payment_id"),
        CheckConstraint("amount_minor > 0", name="amount_positive"),
        CheckConstraint(
            "(purpose = 'order' AND order_id IS NOT NULL) OR "
            "(purpose = 'wallet_topup' AND wallet_id IS NOT NULL)",
            name="purpose_target",
        ),
        # The sweeps and the admin look payments up by status and due time.
        Index("ix_payments_status_next_reconcile_at", "status", "next_reconcile_at"),
        Index("ix_payments_status_created_at", "status", "created_at"),
        # The dashboard's search by the provider's id alone (the UNIQUE leads with provider).
        Index("ix_payments_provider_payment_id", "provider_payment_id"),
        # ... and by the card's last four digits, or the amount (newest first).
        Index("ix_payments_card_last4_id", "card_last4", "id"),
        Index("ix_payments_amount_minor_id", "amount_minor", "id"),
        # One payment in progress or done per order: a second tab or a second render of
        # the checkout page (another key) cannot start a second charge. Failed ones don't count.
        Index(
            "uq_payments_active_order",
            "order_id",
            unique=True,
            postgresql_where=text(ACTIVE_ORDER_PAYMENT_SQL),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    # Born with the customer's intent (checkout page render or API header).
    idempotency_key: Mapped[uuid.UUID] = mapped_column(Uuid(), unique=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id"), index=True)
    # Read-only, for the dashboard's filter by email (never loaded on a money path).
    customer: Mapped[Customer] = relationship(viewonly=True, lazy="raise_on_sql")
    purpose: Mapped[PaymentPurpose] = mapped_column(str_enum(PaymentPurpose, "payment_purpose"))
    order_id: Mapped[int | None] = mapped_column(ForeignKey("orders.id"), index=True)
    wallet_id: Mapped[int | None] = mapped_column(ForeignKey("wallets.id"), index=True)
    provider: Mapped[str] = mapped_column(String(32))
    amount_minor: Mapped[int] = mapped_column(BigInteger)
    currency: Mapped[str] = mapped_column(String(3))
    status: Mapped[PaymentStatus] = mapped_column(
        str_enum(PaymentStatus, "payment_status"), default=PaymentStatus.PENDING
    )
    provider_payment_id: Mapped[str | None] = mapped_column(String(255))
    # The provider's token for the card (Stripe's pm_..., created in the customer's
    # browser): never card data. The charge confirms with it.
    payment_method: Mapped[str | None] = mapped_column(String(255))
    # The address the payment was asked from (after TRUSTED_PROXIES): its declines count
    # against that address too (card testing, services/payments/attempts.py).
    client_address: Mapped[str | None] = mapped_column(String(45))
    # The provider's customer the payment was first sent with (ProviderCustomer), never
    # changed after: a replay sends the same, and a lookup lists that customer's intents.
    provider_customer_id: Mapped[str | None] = mapped_column(String(255))
    # Where the customer authenticates (3-D Secure) while the payment requires action.
    action_url: Mapped[str | None] = mapped_column(String(2048))
    decline_code: Mapped[str | None] = mapped_column(String(64))
    # The card, as the provider's answer names it (brand, last four digits): receipts say
    # it. Never the number: it never reaches us.
    card_brand: Mapped[str | None] = mapped_column(String(20))
    card_last4: Mapped[str | None] = mapped_column(String(4))
    # "Never sent" is a recorded fact: first_sent_at is set (committed) before every
    # call and cleared again only when the call provably never reached the provider.
    first_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    send_count: Mapped[int] = mapped_column(default=0)
    # The provider's clock less ours (seconds), read off the answer to the latest send
    # that got one (its Date header): a lookup's list of what was created around our
    # sends is shifted onto the provider's clock by it. None: no send was answered.
    provider_clock_offset_s: Mapped[float | None] = mapped_column(Float)
    # A charge job holds this lease while it talks to the provider, so a second job
    # (a sweep, a retry) never sends the same payment concurrently.
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # A deferred charge (provider unreachable, rate limited, breaker open) is due then.
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # Unknown: when the next lookup is due. Requires action: when the customer's time to
    # authenticate runs out (SCA_TIMEOUT_S) and the sweep cancels the payment.
    next_reconcile_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    reconcile_attempts: Mapped[int] = mapped_column(default=0)
    last_error: Mapped[str | None] = mapped_column(String(500))
    # The success's effect (order paid, wallet credited) is in place. Cleared when a
    # later decision reverses it (services/payments/state.py), which counts the reversal
    # so a later success credits under a new operation id.
    is_effect_applied: Mapped[bool] = mapped_column(default=False, server_default=false())
    effect_reversals: Mapped[int] = mapped_column(default=0, server_default="0")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, onupdate=utcnow)
