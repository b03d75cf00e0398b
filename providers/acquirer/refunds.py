"""The acquirer's refunds (`POST /payments/{id}/refunds`, `GET /refunds?reference=`), as a
part of AcquirerProvider. No idempotency keys here either: a refund that may have been
sent is looked up by our reference first, and sent again only when the acquirer has no
such refund."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import requests

from providers.base import RefundRequest
from providers.http import HttpPolicy, classify_exception, json_object
from providers.outcomes import Absent, Declined, LookupOutcome, Outcome, Report, Succeeded, Unknown


class AcquirerRefunds:
    """The refund calls of AcquirerProvider (which provides these attributes)."""

    api_base: str
    policy: HttpPolicy
    session: requests.Session
    _outcome_of: Callable[..., Outcome]

    def refund(self, request: RefundRequest) -> Outcome:
        if request.first_sent_at is not None:
            found = self.lookup_refund(request)  # may have been sent: ask, never guess
            if not isinstance(found, Absent):
                return found
        body = {
            "reference": request.reference,
            "amount": request.amount_minor,
            "currency": request.currency,
        }
        try:
            response = self.session.post(
                f"{self.api_base}/payments/{request.provider_payment_id}/refunds",
                json=body,
                timeout=self.policy.timeout,
            )
        except requests.RequestException as exc:
            return classify_exception(exc)
        return self._outcome_of(response, refund_outcome)

    def lookup_refund(self, request: RefundRequest) -> LookupOutcome:
        if request.first_sent_at is None:
            return Absent("never sent")
        try:
            response = self.session.get(
                f"{self.api_base}/refunds",
                params={"reference": request.reference},
                timeout=self.policy.timeout,
            )
        except requests.RequestException as exc:
            return classify_exception(exc)
        if response.status_code != 200:
            return self._outcome_of(response)
        found = json_object(response).get("data")
        refunds = [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []
        if not refunds:
            return Absent(f"no refund with reference {request.reference}")
        approved = [r for r in refunds if r.get("status") == "approved"]
        return refund_outcome(approved[0] if approved else refunds[-1])


def refund_outcome(refund: dict[str, Any]) -> Outcome:
    refund_id = refund.get("id")
    if not isinstance(refund_id, str):
        return Unknown("malformed response: no refund id")
    report = Report.of(
        refund.get("amount"), refund.get("currency"), reference=refund.get("reference")
    )
    if refund.get("status") == "approved":
        return Succeeded(refund_id, report)
    if refund.get("status") == "declined":
        return Declined(str(refund.get("decline_reason") or "declined"), "", refund_id, report)
    return Unknown(f"refund {refund_id} is {refund.get('status')}", is_provider_failure=False)
