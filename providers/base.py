"""What every provider client offers: `charge` and `lookup`, plus declared capabilities."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable

from providers.outcomes import BalancePage, EventPage, LookupOutcome, Outcome, ProviderBalance


@dataclass(frozen=True)
class Capabilities:
    """How a provider can be asked for the truth after an unknown outcome."""

    supports_idempotency_keys: bool
    key_lifetime_s: float | None  # how long the provider remembers a key (None: no keys)
    # How long after the first send a replay with the same key is certainly safe.
    replay_window_s: float | None
    can_replay: bool  # re-sending with the same key returns the stored result
    can_lookup_by_id: bool
    can_lookup_by_reference: bool


# A provider without idempotency keys (Braintree): a payment that may have
# been sent is looked up, by its id or our reference, before anything is sent again.
KEYLESS = Capabilities(
    supports_idempotency_keys=False,
    key_lifetime_s=None,
    replay_window_s=None,
    can_replay=False,
    can_lookup_by_id=True,
    can_lookup_by_reference=True,
)


@dataclass(frozen=True)
class ChargeRequest:
    """Everything a provider needs to charge one payment; built from the payment row."""

    payment_id: int
    idempotency_key: str
    amount_minor: int
    currency: str
    order_id: int | None = None
    provider_payment_id: str | None = None
    # When the first request for this payment may have left us (None: never).
    first_sent_at: datetime | None = None
    # When the latest request may have left us (None: the first one is the latest).
    last_sent_at: datetime | None = None
    # The provider's clock less ours, read at the latest answered send (None: none was).
    clock_offset_s: float | None = None
    payment_method: str | None = None  # the provider's card token (Stripe: pm_...)
    # The provider's customer it is sent with (Stripe: cus_...): a lookup lists only that
    # customer's payments. None: sent without one (a lookup reads the wider window).
    provider_customer_id: str | None = None
    # Where the provider sends the customer back after authenticating (3-D Secure).
    return_url: str | None = None

    @property
    def reference(self) -> str:
        """Our merchant reference at the provider: stable for the payment's whole life."""
        return self.idempotency_key


@dataclass(frozen=True)
class RefundRequest:
    """Everything a provider needs to refund (part of) one charged payment; built from the
    refund row. Outcomes name the provider's refund id where charges name the payment's."""

    refund_id: int
    idempotency_key: str
    payment_id: int
    provider_payment_id: str
    amount_minor: int
    currency: str
    provider_refund_id: str | None = None
    first_sent_at: datetime | None = None
    last_sent_at: datetime | None = None  # the latest request's (None: the first's)

    @property
    def reference(self) -> str:
        """Our reference of the refund at the provider (Braintree's order_id)."""
        return self.idempotency_key


class Provider(Protocol):
    name: str
    capabilities: Capabilities

    def charge(self, request: ChargeRequest) -> Outcome:
        """Ask the provider to charge once. Never raises for transport or business results."""
        ...

    def lookup(self, request: ChargeRequest) -> LookupOutcome:
        """Ask the provider what happened to this payment. Never charges a second time;
        a keyed provider sends nothing here (a replay of the key is a send: the engine
        makes and records it, services/movements/replays.py)."""
        ...

    def cancel(self, request: ChargeRequest) -> Outcome:
        """Cancel a payment that waits for the customer's authentication (abandoned).
        Idempotent; the answer is the payment's final state (a success if the customer
        authenticated first), Unknown when it was lost."""
        ...

    def refund(self, request: RefundRequest) -> Outcome:
        """Ask the provider to refund once. Never raises for transport or business results."""
        ...

    def lookup_refund(self, request: RefundRequest) -> LookupOutcome:
        """Ask the provider what happened to this refund. Never refunds a second time;
        a keyed provider sends nothing here (as `lookup`)."""
        ...

    def undelivered_events(self, after: str | None = None) -> EventPage | None:
        """One page of the webhook events the provider could not deliver, after the
        cursor `after`; None when it cannot be asked."""
        ...


@runtime_checkable
class BalanceReader(Protocol):
    """A provider whose balance can be read (the books' reconciliation): Stripe's."""

    def balance_page(
        self, created_from: datetime, created_to: datetime, after: str | None = None
    ) -> BalancePage | None:
        """One page of the balance transactions created in [from, to), after `after`."""
        ...

    def payout_page(self, payout_id: str, after: str | None = None) -> BalancePage | None:
        """One page of what a payout contains."""
        ...


@runtime_checkable
class ManualPayouts(Protocol):
    """A provider whose payouts may be asked for by hand (Stripe's `POST /v1/payouts`),
    whose contents it does not list."""

    def payout_is_automatic(self, payout_id: str) -> bool | None:
        """Whether the payout was made on the provider's schedule; None: not known now."""
        ...


@runtime_checkable
class BalanceHolder(Protocol):
    """A provider that says what it holds for us now (Stripe's `GET /v1/balance`): the
    books compare it with the clearing account."""

    def balance_now(self) -> ProviderBalance | None:
        """Per currency, what it holds now; None when it cannot be asked."""
        ...
