"""The outcomes of a provider call. Calls return these; they never raise for them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Succeeded:
    """The provider charged the customer. Final."""

    provider_payment_id: str


@dataclass(frozen=True)
class Declined:
    """The provider refused (card declined, invalid request). Final: nothing was charged."""

    code: str
    message: str = ""
    provider_payment_id: str | None = None


@dataclass(frozen=True)
class NotSent:
    """The request provably never reached the provider (connect refused or timed out, DNS,
    TLS handshake, 429 before processing, key in use, breaker open).

    Safe to repeat, after `retry_after_s` when given.
    """

    reason: str
    retry_after_s: float | None = None
    is_provider_failure: bool = True  # counts against the breaker (a breaker rejection doesn't)


@dataclass(frozen=True)
class Unknown:
    """The provider may have acted (read timeout, reset after sending, 5xx).

    NOT safe to repeat blindly: resolve it by asking the provider (replay with the
    same idempotency key, or look the payment up by our reference).
    """

    reason: str
    is_provider_failure: bool = True  # False when the provider answered, just not finally


@dataclass(frozen=True)
class Absent:
    """A lookup's answer: the provider has no record of this payment. Sending it is safe."""

    reason: str


Outcome = Succeeded | Declined | NotSent | Unknown
LookupOutcome = Succeeded | Declined | NotSent | Unknown | Absent


def is_provider_failure(outcome: Outcome | Absent) -> bool:
    """Does this outcome count against the provider's circuit breaker?

    Timeouts, connection errors, 429 and 5xx do; declines and other answers don't.
    """
    if isinstance(outcome, NotSent | Unknown):
        return outcome.is_provider_failure
    return False
