"""A bank acquirer gateway WITHOUT idempotency keys: a repeated POST would charge again.

So the client never re-sends a charge that may have been sent: it looks the
reference up first and sends only when the acquirer has no such payment.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import requests

from providers.acquirer.refunds import AcquirerRefunds
from providers.base import KEYLESS, ChargeRequest
from providers.http import (
    HttpPolicy,
    build_session,
    classify_exception,
    fetch_list,
    json_object,
    parse_retry_after,
)
from providers.outcomes import (
    Absent,
    Declined,
    EventPage,
    LookupOutcome,
    NotSent,
    Outcome,
    Report,
    Succeeded,
    Unknown,
)

log = logging.getLogger(__name__)


class AcquirerProvider(AcquirerRefunds):
    name = "acquirer"
    capabilities = KEYLESS

    def __init__(self, api_base: str, api_key: str, policy: HttpPolicy) -> None:
        self.api_base = api_base.rstrip("/")
        self.policy = policy
        # No keyed POSTs here: the adapter retries GETs only.
        self.session = build_session(policy, is_keyed_post_retryable=False)
        self.session.headers["X-Api-Key"] = api_key

    def charge(self, request: ChargeRequest) -> Outcome:
        if request.first_sent_at is not None:
            # It may have been sent before: only the acquirer knows. Ask, never guess.
            found = self.lookup(request)
            if not isinstance(found, Absent):
                return found
        body: dict[str, Any] = {
            "reference": request.reference,
            "amount": request.amount_minor,
            "currency": request.currency,
            "card": request.payment_method,
            "order_reference": request.order_id,
        }
        try:
            response = self.session.post(
                f"{self.api_base}/payments", json=body, timeout=self.policy.timeout
            )
        except requests.RequestException as exc:
            return classify_exception(exc)
        return self._outcome_of(response)

    def lookup(self, request: ChargeRequest) -> LookupOutcome:
        try:
            if request.provider_payment_id:
                response = self.session.get(
                    f"{self.api_base}/payments/{request.provider_payment_id}",
                    timeout=self.policy.timeout,
                )
            else:
                response = self.session.get(
                    f"{self.api_base}/payments",
                    params={"reference": request.reference},
                    timeout=self.policy.timeout,
                )
        except requests.RequestException as exc:
            return classify_exception(exc)
        if response.status_code == 404:
            return Absent(f"no payment {request.provider_payment_id}")
        if response.status_code != 200:
            return self._outcome_of(response)
        body = json_object(response)
        if "data" not in body:
            return _payment_outcome(body)
        found = body.get("data")
        payments = [p for p in found if isinstance(p, dict)] if isinstance(found, list) else []
        if not payments:
            return Absent(f"no payment with reference {request.reference}")
        approved = [p for p in payments if p.get("status") == "approved"]
        if len(approved) > 1:
            log.error(
                "acquirer charged reference %s %d times (payment %s)",
                request.reference,
                len(approved),
                request.payment_id,
            )
        return _payment_outcome(approved[0] if approved else payments[-1])

    def cancel(self, request: ChargeRequest) -> Outcome:
        """The acquirer never waits for authentication, so there is nothing to cancel:
        what it knows of the payment is the answer."""
        found = self.lookup(request)
        if isinstance(found, Absent):
            return Unknown(found.reason, is_provider_failure=False)
        return found

    def undelivered_events(self, after: str | None = None) -> EventPage | None:
        """The events the acquirer failed to deliver to us, all in one answer (its API
        has no pages); None when it cannot be asked now."""
        page = fetch_list(
            self.session,
            f"{self.api_base}/events",
            {"delivered": "false"},
            self.policy,
            "acquirer events backfill",
        )
        return None if page is None else EventPage(page["data"])

    def _outcome_of(
        self,
        response: requests.Response,
        parse: Callable[[dict[str, Any]], Outcome] | None = None,
    ) -> Outcome:
        """A POST's answer: `parse` (a payment's by default) reads a 2xx body."""
        status = response.status_code
        body = json_object(response)
        if 200 <= status < 300:
            return (parse or _payment_outcome)(body)
        error = body.get("error")
        if not isinstance(error, dict):
            error = {}
        if status == 429:
            return NotSent("rate limited (429)", retry_after_s=parse_retry_after(response))
        if status >= 500:
            return Unknown(f"provider error {status}: {error.get('message', '')}")
        if status in (401, 403):
            log.error("acquirer rejected our API key (%s): check ACQUIRER_API_KEY", status)
            return NotSent(f"authentication failed ({status})", is_provider_failure=False)
        return Declined(
            error.get("code") or f"http_{status}",
            error.get("message", f"request rejected ({status})"),
        )


def payment_report(payment: dict[str, Any]) -> Report:
    """What an acquirer payment says it is for: our reference echoed, amount, currency."""
    return Report.of(
        payment.get("amount"), payment.get("currency"), reference=payment.get("reference")
    )


def _payment_outcome(payment: dict[str, Any]) -> Outcome:
    payment_id = payment.get("id")
    if not isinstance(payment_id, str):
        return Unknown("malformed response: no payment id")
    report = payment_report(payment)
    if payment.get("status") == "approved":
        return Succeeded(payment_id, report)
    if payment.get("status") == "declined":
        return Declined(str(payment.get("decline_reason") or "declined"), "", payment_id, report)
    return Unknown(f"payment {payment_id} is {payment.get('status')}", is_provider_failure=False)
