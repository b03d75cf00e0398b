"""Stripe Refunds (`POST /v1/refunds`, `GET /v1/refunds/{id}`, `GET /v1/refunds`), as a
part of StripeProvider: the same session, key handling and error reading as charges.

A refund is keyed like a charge (its own idempotency key), so a lost answer is resolved
by replaying the identical create while Stripe keeps the key, then by the refund's id,
then by listing the payment's refunds for our `metadata[refund_id]` (lists are not
eventually consistent like search: an absent refund is absent)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import requests

from providers.base import Capabilities, RefundRequest
from providers.http import HttpPolicy, classify_exception, json_object
from providers.outcomes import (
    Absent,
    Declined,
    LookupOutcome,
    Outcome,
    Report,
    Succeeded,
    Unknown,
)
from providers.stripe.common import error_of, is_within, lookup_failed

REFUNDS_PAGE_SIZE = 100  # a payment has few refunds; Stripe's maximum page size


class StripeRefunds:
    """The refund calls of StripeProvider (which provides these attributes)."""

    api_base: str
    policy: HttpPolicy
    session: requests.Session
    capabilities: Capabilities
    settle_s: float
    _outcome_of: Callable[..., Outcome]

    def refund(self, request: RefundRequest) -> Outcome:
        form = {
            "payment_intent": request.provider_payment_id,
            "amount": str(request.amount_minor),
            "metadata[refund_id]": str(request.refund_id),
            "metadata[payment_id]": str(request.payment_id),
        }
        try:
            response = self.session.post(
                f"{self.api_base}/v1/refunds",
                data=form,
                headers={"Idempotency-Key": request.idempotency_key},
                timeout=self.policy.timeout,
            )
        except requests.RequestException as exc:
            return classify_exception(exc)
        return self._outcome_of(response, refund_outcome)

    def lookup_refund(self, request: RefundRequest) -> LookupOutcome:
        """The refund by id, else the payment's refunds listed for ours: read without
        sending (a replay of the key is the engine's send). A list that lacks it proves
        absence only once our last request cannot still be running at Stripe."""
        if request.first_sent_at is None:
            return Absent("never sent")
        if request.provider_refund_id:
            by_id = self._get(f"/v1/refunds/{request.provider_refund_id}", "retrieve refund")
            if not isinstance(by_id, dict):
                return by_id
            return refund_outcome(by_id)
        listed = self._get(
            "/v1/refunds",
            "list refunds",
            {"payment_intent": request.provider_payment_id, "limit": str(REFUNDS_PAGE_SIZE)},
        )
        if not isinstance(listed, dict):
            return listed
        found = listed.get("data")
        ours = [
            r
            for r in (found if isinstance(found, list) else [])
            if isinstance(r, dict)
            and isinstance(r.get("metadata"), dict)
            and r["metadata"].get("refund_id") == str(request.refund_id)
        ]
        if not ours:
            if is_within(request.last_sent_at or request.first_sent_at, self.settle_s):
                return Unknown(
                    "not found yet: our last refund request may still be running at Stripe",
                    is_provider_failure=False,
                )
            return Absent(
                f"no refund of {request.provider_payment_id} for refund {request.refund_id}"
            )
        return refund_outcome(ours[0])

    def _get(
        self, path: str, what: str, params: dict[str, str] | None = None
    ) -> dict[str, Any] | Unknown | Absent:
        try:
            response = self.session.get(
                f"{self.api_base}{path}", params=params, timeout=self.policy.timeout
            )
        except requests.RequestException as exc:
            classified = classify_exception(exc)
            return classified if isinstance(classified, Unknown) else Unknown(classified.reason)
        if response.status_code == 200:
            return json_object(response)
        error = error_of(response)
        if response.status_code == 404 and error.get("code") == "resource_missing":
            return Absent(f"{what}: {error.get('message', 'no such refund')}")
        return lookup_failed(what, response, error)


def refund_report(refund: dict[str, Any]) -> Report:
    """What a refund says it is: amount, currency, our refund id echoed in its metadata."""
    metadata = refund.get("metadata")
    return Report.of(
        refund.get("amount"),
        refund.get("currency"),
        our_id=metadata.get("refund_id") if isinstance(metadata, dict) else None,
    )


def refund_outcome(refund: dict[str, Any]) -> Outcome:
    refund_id = refund.get("id")
    if not isinstance(refund_id, str) or refund.get("object") not in (None, "refund"):
        return Unknown("malformed response: no refund id")
    status = refund.get("status")
    if status == "succeeded":
        return Succeeded(refund_id, refund_report(refund))
    if status in ("failed", "canceled"):
        reason = refund.get("failure_reason") or status
        return Declined(str(reason), f"refund {status}", refund_id, refund_report(refund))
    # pending, requires_action: Stripe has the refund and the money is on its way (for
    # days, for some cards): its id and report say so; its event or a lookup ends it.
    return Unknown(
        f"refund {refund_id} is {status}",
        is_provider_failure=False,
        provider_payment_id=refund_id,
        report=refund_report(refund),
    )
