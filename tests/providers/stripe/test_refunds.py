"""The Stripe client's refunds against the live sandbox: each outcome, and lookups that
never refund twice."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from providers.base import RefundRequest
from providers.outcomes import Absent, Declined, Succeeded, Unknown
from providers.stripe.refunds import refund_outcome
from tests.providers.stripe.support import charge_request, client


def _paid(sandbox: Any, method: str = "pm_card_visa") -> str:
    outcome = client(sandbox).charge(charge_request(payment_method=method))
    assert isinstance(outcome, Succeeded)
    return outcome.provider_payment_id


def _request(intent_id: str, **overrides: Any) -> RefundRequest:
    fields: dict[str, Any] = {
        "refund_id": 7,
        "idempotency_key": str(uuid.uuid4()),
        "payment_id": 1,
        "provider_payment_id": intent_id,
        "amount_minor": 1000,
        "currency": "EUR",
    }
    return RefundRequest(**{**fields, **overrides})


def test_a_refund_and_its_lookups(sandbox: Any) -> None:
    stripe = client(sandbox)
    request = _request(_paid(sandbox))
    done = stripe.refund(request)
    assert isinstance(done, Succeeded) and done.provider_payment_id.startswith("re_")
    assert done.report.amount_minor == 1000 and done.report.our_id == "7"
    sent = RefundRequest(**{**request.__dict__, "first_sent_at": datetime.now(UTC)})
    assert isinstance(stripe.refund(sent), Succeeded)  # the replay: the stored answer
    # Listing finds it at once (a list is consistent) ...
    assert isinstance(stripe.lookup_refund(sent), Succeeded)
    old = RefundRequest(**{**sent.__dict__, "first_sent_at": datetime.now(UTC) - timedelta(days=2)})
    assert isinstance(stripe.lookup_refund(old), Succeeded)  # by listing the intent's refunds
    by_id = RefundRequest(**{**old.__dict__, "provider_refund_id": done.provider_payment_id})
    assert isinstance(stripe.lookup_refund(by_id), Succeeded)
    assert len(sandbox.requests_log(endpoint="refund")) == 2  # the refund and one replay
    # ... but not finding it proves nothing while our last request may still be running.
    other = _request(_paid(sandbox), first_sent_at=datetime.now(UTC) - timedelta(days=2))
    recent = RefundRequest(**{**other.__dict__, "last_sent_at": datetime.now(UTC)})
    assert isinstance(stripe.lookup_refund(recent), Unknown)
    assert isinstance(stripe.lookup_refund(other), Absent)


def test_refusals_and_absence(sandbox: Any) -> None:
    stripe = client(sandbox)
    too_much = stripe.refund(_request(_paid(sandbox), amount_minor=9999))
    assert isinstance(too_much, Declined) and too_much.code == "amount_too_large"
    # Stripe's failing refund card: the refund succeeds first and fails later (an event).
    later = stripe.refund(_request(_paid(sandbox, "pm_card_refundFail")))
    assert isinstance(later, Succeeded)
    never = _request(_paid(sandbox), first_sent_at=datetime.now(UTC) - timedelta(days=2))
    assert isinstance(stripe.lookup_refund(never), Absent)
    assert isinstance(stripe.lookup_refund(_request("pi_x")), Absent)  # never sent


def test_a_pending_or_malformed_refund_is_unknown() -> None:
    pending = refund_outcome({"id": "re_1", "status": "pending", "amount": 5, "currency": "eur"})
    # Pending names the refund: the provider has it (processing, not a lost answer).
    assert isinstance(pending, Unknown) and pending.provider_payment_id == "re_1"
    assert pending.report.amount_minor == 5
    assert isinstance(refund_outcome({"status": "succeeded"}), Unknown)
    assert isinstance(refund_outcome({"id": "re_1", "object": "charge"}), Unknown)
