"""Stripe PaymentIntents over plain requests: the same client talks to Stripe and the sandbox."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import requests

from providers.base import Capabilities, ChargeRequest
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
    Unknown,
)
from providers.stripe.balance import StripeBalance
from providers.stripe.common import error_of, lookup_failed
from providers.stripe.customers import StripeCustomers, card_fingerprint_of
from providers.stripe.intents import intent_outcome, intent_report
from providers.stripe.lookups import StripeLookups
from providers.stripe.refunds import StripeRefunds

log = logging.getLogger(__name__)

KEY_LIFETIME_S = 24 * 3600  # Stripe keeps idempotency keys for at least 24 hours
# Replay only while the key is certainly alive: the margin covers clock skew and a
# reconcile job that starts just before the deadline.
REPLAY_MARGIN_S = 3600
# How long a request may still be running at Stripe after we stopped waiting for its
# answer (a read timeout, a cut connection): an intent it creates appears only then, so
# absence is concluded only this long after our last send. Stripe's own request limit
# is well under a minute; two leave room for a slow account.
SETTLE_S = 120
# The API version this client is written against (and the sandbox implements); sent
# as Stripe-Version on every call so response shapes never follow an account default.
API_VERSION = "2026-10-28.endive"
EVENTS_PAGE_SIZE = 100  # Stripe's maximum page size (its default is 10)


class StripeProvider(StripeLookups, StripeRefunds, StripeCustomers, StripeBalance):
    name = "stripe"
    capabilities = Capabilities(
        supports_idempotency_keys=True,
        key_lifetime_s=KEY_LIFETIME_S,
        replay_window_s=KEY_LIFETIME_S - REPLAY_MARGIN_S,
        can_replay=True,
        can_lookup_by_id=True,
        can_lookup_by_reference=True,
    )

    def __init__(
        self,
        api_base: str,
        secret_key: str,
        policy: HttpPolicy,
        api_version: str = API_VERSION,
        events_page_size: int = EVENTS_PAGE_SIZE,
        settle_s: float = SETTLE_S,
    ) -> None:
        self.api_base = api_base.rstrip("/")
        self.policy = policy
        self.session = build_session(policy, is_keyed_post_retryable=True)
        self.session.headers["Authorization"] = f"Bearer {secret_key}"
        self.session.headers["Stripe-Version"] = api_version
        self.events_page_size = events_page_size
        self.settle_s = settle_s

    # -- calls -------------------------------------------------------------------------

    def charge(self, request: ChargeRequest) -> Outcome:
        outcome = self._create(request)
        if isinstance(outcome, Unknown) and "idempotency_error" in outcome.reason:
            # Same key, different parameters: a bug on our side. Never retried.
            log.error(
                "stripe idempotency_error for payment %s key %s: %s",
                request.payment_id,
                request.idempotency_key,
                outcome.reason,
            )
        return outcome

    def lookup(self, request: ChargeRequest) -> LookupOutcome:
        """What Stripe holds for this payment, read without sending anything: the intent
        by id, search as a hint, and a complete list of the intents created around our
        sends as the only proof that none exists (search is eventually consistent:
        "normally within a minute", far longer during the outages that bring us here).
        A replay of the key is a send, made and recorded by the engine before it asks
        here (services/movements/replays.py)."""
        if request.first_sent_at is None:
            return Absent("never sent")
        if request.provider_payment_id:
            by_id = self._retrieve(request.provider_payment_id)
            if not isinstance(by_id, Unknown) or by_id.provider_payment_id:
                return by_id
        found, offset_s = self._search(request)
        if found is not None:
            return found
        return self._list_around_sends(request, offset_s)

    def cancel(self, request: ChargeRequest) -> Outcome:
        """Cancel an intent whose customer never authenticated. A second cancel (or one
        after the customer finished) answers 400 with the intent: its state is the answer."""
        if not request.provider_payment_id:
            return Unknown("no payment_intent id to cancel", is_provider_failure=False)
        try:
            response = self.session.post(
                f"{self.api_base}/v1/payment_intents/{request.provider_payment_id}/cancel",
                data={"cancellation_reason": "abandoned"},
                headers={"Idempotency-Key": f"{request.idempotency_key}-cancel"},
                timeout=self.policy.timeout,
            )
        except requests.RequestException as exc:
            return classify_exception(exc)
        if response.status_code == 400:
            intent = error_of(response).get("payment_intent")
            if isinstance(intent, dict) and intent.get("id") == request.provider_payment_id:
                return intent_outcome(intent)
        outcome = self._outcome_of(response)
        if isinstance(outcome, Declined) and response.status_code >= 400:
            # A refusal that names no intent says nothing about the payment: nothing was
            # cancelled, and the payment did not fail. A lookup tells where it is.
            return Unknown(
                f"cancel refused ({response.status_code}): {outcome.code} {outcome.message}",
                is_provider_failure=False,
            )
        return outcome

    def undelivered_events(self, after: str | None = None) -> EventPage | None:
        """One page of the events Stripe failed to deliver to us, newest first, starting
        after the event id `after` (None when Stripe cannot be asked now)."""
        params = {"delivery_success": "false", "limit": str(self.events_page_size)}
        if after:
            params["starting_after"] = after
        page = fetch_list(
            self.session, f"{self.api_base}/v1/events", params, self.policy, "stripe events"
        )
        if page is None:
            return None
        events = page["data"]
        has_more = page.get("has_more") is True and bool(events)
        last_id = events[-1].get("id") if events else None
        cursor = last_id if has_more and isinstance(last_id, str) else None
        return EventPage(events, cursor)

    # -- HTTP --------------------------------------------------------------------------

    def _create(self, request: ChargeRequest) -> Outcome:
        form = {
            "amount": str(request.amount_minor),
            "currency": request.currency.lower(),
            # Server-side confirmation with the card the customer's browser tokenized;
            # a card that needs 3-D Secure answers requires_action with a redirect to
            # the bank, which sends the customer back to return_url.
            "confirm": "true",
            # Cards only (this API version refuses payment_method_types: read-only now).
            "allowed_payment_method_types[]": "card",
            "metadata[payment_id]": str(request.payment_id),
            # The card's brand and last four digits, for the receipt.
            "expand[]": "payment_method",
        }
        if request.payment_method:
            form["payment_method"] = request.payment_method
        if request.return_url:
            form["return_url"] = request.return_url
        if request.order_id is not None:
            form["metadata[order_id]"] = str(request.order_id)
        if request.provider_customer_id:
            form["customer"] = request.provider_customer_id
        try:
            response = self.session.post(
                f"{self.api_base}/v1/payment_intents",
                data=form,
                headers={"Idempotency-Key": request.idempotency_key},
                timeout=self.policy.timeout,
            )
        except requests.RequestException as exc:
            return classify_exception(exc)
        return self._outcome_of(response)

    def _retrieve(self, intent_id: str) -> LookupOutcome:
        try:
            response = self.session.get(
                f"{self.api_base}/v1/payment_intents/{intent_id}",
                params={"expand[]": "payment_method"},
                timeout=self.policy.timeout,
            )
        except requests.RequestException as exc:
            return classify_exception(exc)
        if response.status_code == 200:
            return intent_outcome(json_object(response))
        error = error_of(response)
        if response.status_code == 404 and error.get("code") == "resource_missing":
            return Absent(f"no payment_intent {intent_id}")
        # Anything else (a proxy's 404, a 400, a 5xx) tells nothing about the payment:
        # never a decline, which would be final. Ask again later.
        return lookup_failed("retrieve", response, error)

    def _outcome_of(
        self,
        response: requests.Response,
        parse: Callable[[dict[str, Any]], Outcome] | None = None,
    ) -> Outcome:
        """A POST's answer: `parse` (a PaymentIntent's by default) reads a 2xx body."""
        status = response.status_code
        body = json_object(response)
        if 200 <= status < 300:
            return (parse or intent_outcome)(body)
        error = body.get("error")
        if not isinstance(error, dict):
            error = {}
        code = error.get("code") or error.get("type") or f"http_{status}"
        # "Not sent" only from Stripe itself: its Request-Id and its error object. A
        # balancer's 429 or 401 page may come after Stripe acted (the key makes a repeat
        # safe, but the first send's time must stay: absence is measured from it).
        is_stripes = bool(response.headers.get("Request-Id")) and bool(error)
        if status in (401, 403, 429) and not is_stripes:
            return Unknown(
                f"{status} without Stripe's Request-Id and error: an edge's answer, after "
                "which Stripe may have acted",
                is_provider_failure=status == 429,
            )
        if status == 429:
            return NotSent("rate limited (429)", retry_after_s=parse_retry_after(response))
        if status == 409 and code == "idempotency_key_in_use":
            # The first request with this key is still running at Stripe: it reached
            # Stripe, so this is no "not sent" (that would clear first_sent_at and let
            # failover send the payment elsewhere); its outcome is for a lookup to tell.
            return Unknown(
                "idempotency_key_in_use: the first request with this key is still running",
                is_provider_failure=False,
            )
        if status >= 500:
            return Unknown(f"provider error {status}: {error.get('message', '')}")
        if error.get("type") == "idempotency_error":
            return Unknown(
                f"idempotency_error: {error.get('message', '')}", is_provider_failure=False
            )
        if status in (401, 403):
            log.error("stripe rejected our API key (%s): check STRIPE_SECRET_KEY", status)
            return NotSent(f"authentication failed ({status})", is_provider_failure=False)
        if error.get("type") == "card_error":
            intent = error.get("payment_intent")
            if not isinstance(intent, dict):
                intent = {}
            return Declined(
                error.get("decline_code") or code,
                error.get("message", ""),
                intent.get("id") if isinstance(intent.get("id"), str) else None,
                intent_report(intent) if intent else Report(),
                card_fingerprint=card_fingerprint_of(error.get("payment_method")),
            )
        return Declined(
            code,
            error.get("message", f"request rejected ({status})"),
            is_request_error=error.get("type") == "invalid_request_error",
        )
