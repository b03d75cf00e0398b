"""How Stripe is asked where a payment is without sending anything (a part of
StripeProvider): search as a hint, and a complete list of the intents created around our
sends as the only proof that none exists (search is eventually consistent: "normally
within a minute", far longer during the outages that bring us here). A match rests on our
metadata, but never its absence alone: an intent in the window with our amount, currency
and customer and no metadata at all may be ours edited, and blocks absence."""

from __future__ import annotations

import logging
import time
from typing import Any

import requests
from prometheus_client import Counter, Histogram

from providers.base import ChargeRequest
from providers.http import HttpPolicy, classify_exception, clock_offset_s, json_object
from providers.outcomes import Absent, LookupOutcome, Outcome, Unknown
from providers.stripe.common import error_of, is_within, lookup_failed
from providers.stripe.intents import intent_outcome, payment_ref

log = logging.getLogger(__name__)

# Our clock and Stripe's disagree by an offset read off every answer's Date header
# (providers/http.py): the list of intents around our sends covers our send times as
# they are, shifted by the offset read at the last answered send and by the one read
# now, and reaches this much further on both sides, for the reading's own error (the
# header's whole seconds and the request's latency, well under a minute). A wrong
# reading can only widen the list, never move it off the sends.
CLOCK_MARGIN_S = 60
LIST_PAGE_SIZE = 100  # Stripe's maximum
# Pages of that list read at the most: past 2,000 intents created around one payment's
# sends absence stays unproven, and the payment goes to review in time.
LIST_MAX_PAGES = 20


class StripeLookups:
    """The reads of StripeProvider's lookups (which provides these attributes)."""

    api_base: str
    policy: HttpPolicy
    session: requests.Session
    settle_s: float

    def _search(self, request: ChargeRequest) -> tuple[LookupOutcome | None, float | None]:
        """A hint: the intent when search finds it, an Unknown when search fails, and
        None when it finds nothing, which proves nothing (its index lags); with Stripe's
        clock less ours, read off the answer (None: it had no Date)."""
        query = f"metadata['payment_id']:'{request.payment_id}'"
        try:
            response = self.session.get(
                f"{self.api_base}/v1/payment_intents/search",
                params={"query": query},
                timeout=self.policy.timeout,
            )
        except requests.RequestException as exc:
            return classify_exception(exc), None
        offset_s = clock_offset_s(response, time.time())
        if response.status_code != 200:
            return lookup_failed("search", response, error_of(response)), offset_s
        found = json_object(response).get("data")
        intents = [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []
        return (self._pick(request, intents) if intents else None), offset_s

    def _list_around_sends(self, request: ChargeRequest, offset_s: float | None) -> LookupOutcome:
        """Absent only from a complete list (strongly consistent) of the intents created
        between our first send and the last one's settling, on Stripe's clock (ours
        shifted by the measured offset), matched on our metadata."""
        first = request.first_sent_at
        last = request.last_sent_at or first
        assert first is not None and last is not None  # lookup() returned before
        if is_within(last, self.settle_s):
            return Unknown(
                "not found yet: our last request may still be running at Stripe",
                is_provider_failure=False,
            )
        window = _window_on_their_clock(request, offset_s)
        if isinstance(window, Unknown):
            return window
        low, high = window
        params = {
            "created[gte]": str(int(first.timestamp() + low) - CLOCK_MARGIN_S),
            "created[lte]": str(int(last.timestamp() + self.settle_s + high) + CLOCK_MARGIN_S),
            "limit": str(LIST_PAGE_SIZE),
        }
        if request.provider_customer_id:
            # Only this customer's intents (Stripe's own filter): one short page, however
            # busy the shop.
            params["customer"] = request.provider_customer_id
        ours: list[dict[str, Any]] = []
        # Intents that may be ours with our metadata edited away (an operator in Stripe's
        # Dashboard): no payment_id, our amount and currency (and customer, when listed
        # by it). Metadata is editable, so its absence never proves ours absent.
        candidates: list[str] = []
        for pages in range(1, LIST_MAX_PAGES + 1):
            LIST_PAGES.inc()
            try:
                response = self.session.get(
                    f"{self.api_base}/v1/payment_intents",
                    params=params,
                    timeout=self.policy.timeout,
                )
            except requests.RequestException as exc:
                return classify_exception(exc)
            if response.status_code != 200:
                return lookup_failed("list", response, error_of(response))
            body = json_object(response)
            data = body.get("data")
            intents = [i for i in data if isinstance(i, dict)] if isinstance(data, list) else []
            ours += [i for i in intents if payment_ref(i) == str(request.payment_id)]
            candidates += [str(i.get("id")) for i in intents if _may_be_ours(request, i)]
            last_id = intents[-1].get("id") if intents else None
            if body.get("has_more") is not True or not isinstance(last_id, str):
                LIST_READS.observe(pages)
                break
            params["starting_after"] = last_id
        else:
            LIST_READS.observe(LIST_MAX_PAGES)
            if ours:  # found already: the rest of the window cannot undo it
                return self._pick(request, ours)
            return Unknown(
                f"more than {LIST_MAX_PAGES * LIST_PAGE_SIZE} intents were created around "
                "our sends: absence is not proven",
                is_provider_failure=False,
            )
        if ours:
            return self._pick(request, ours)
        if candidates:
            return Unknown(
                f"no intent carries our metadata, but {', '.join(candidates[:5])} in the "
                "window has our amount and currency without any: it may be ours with its "
                "metadata edited, so absence is not proven (a person decides)",
                is_provider_failure=False,
            )
        return Absent(
            f"no payment_intent for payment {request.payment_id} among all those created "
            f"from {params['created[gte]']} to {params['created[lte]']} (unix time, "
            f"Stripe's clock)"
        )

    def _pick(self, request: ChargeRequest, intents: list[dict[str, Any]]) -> Outcome:
        succeeded = [i for i in intents if i.get("status") == "succeeded"]
        if len(succeeded) > 1:
            log.error(
                "stripe has %d succeeded intents for payment %s (key %s)",
                len(succeeded),
                request.payment_id,
                request.idempotency_key,
            )
        return intent_outcome(succeeded[0] if succeeded else intents[-1])


def _may_be_ours(request: ChargeRequest, intent: dict[str, Any]) -> bool:
    """An intent without our metadata that has our amount, currency and customer."""
    if payment_ref(intent) is not None or not isinstance(intent.get("id"), str):
        return False
    customer = intent.get("customer")
    return (
        intent.get("amount") == request.amount_minor
        and intent.get("currency") == request.currency.lower()
        and (request.provider_customer_id is None or customer == request.provider_customer_id)
    )


def _window_on_their_clock(
    request: ChargeRequest, offset_s: float | None
) -> tuple[float, float] | Unknown:
    """How far to shift our send times onto Stripe's clock, at the least and the most:
    our clock as it is, the offset read at the last answered send, and the one read
    now; or why absence cannot be proven (no reading now: the clocks are unknown)."""
    if offset_s is None:
        return Unknown(
            "Stripe's answer had no Date: its clock is unknown, so absence is not proven",
            is_provider_failure=False,
        )
    readings = [0.0, offset_s]
    if request.clock_offset_s is not None:
        readings.append(request.clock_offset_s)
    return min(readings), max(readings)


# How many pages of the intents around a payment's sends one lookup read (a busy shop
# without customers reads many; Stripe's read rate limit is per account).
LIST_PAGES = Counter("stripe_lookup_list_pages_total", "Pages of intents lookups listed")
LIST_READS = Histogram(
    "stripe_lookup_pages_per_lookup",
    "Pages of intents one lookup listed",
    buckets=(1, 2, 3, 5, 10, 20),
)
