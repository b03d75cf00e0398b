"""Stripe Customers and PaymentMethods, as a part of StripeProvider: a Stripe Customer
per shop customer (its payments name it, so a lookup lists only its intents) and a
card's fingerprint (card testing counts declines per card)."""

from __future__ import annotations

import re
from collections.abc import Callable

import requests

from providers.http import HttpPolicy, classify_exception, json_object
from providers.outcomes import NotSent, Outcome, Unknown

PM_RE = re.compile(r"pm_[A-Za-z0-9_]{1,250}")  # a PaymentMethod id, as a URL path segment
CUSTOMER_RE = re.compile(r"cus_[A-Za-z0-9]{1,250}")


class StripeCustomers:
    """The customer and payment-method calls of StripeProvider (which provides these)."""

    api_base: str
    policy: HttpPolicy
    session: requests.Session
    _outcome_of: Callable[..., Outcome]

    def create_customer(self, customer_id: int) -> str | Outcome:
        """Our customer as a Stripe Customer (its id), once per customer: the request is
        keyed by our customer's id, so a repeat while Stripe keeps the key is the same."""
        try:
            response = self.session.post(
                f"{self.api_base}/v1/customers",
                data={"metadata[customer_id]": str(customer_id)},
                headers={"Idempotency-Key": f"customer-{customer_id}"},
                timeout=self.policy.timeout,
            )
        except requests.RequestException as exc:
            return classify_exception(exc)
        body = json_object(response)
        found = body.get("id")
        metadata = body.get("metadata")
        is_ours = isinstance(metadata, dict) and metadata.get("customer_id") == str(customer_id)
        if response.status_code == 200 and isinstance(found, str) and is_ours:
            return found if CUSTOMER_RE.fullmatch(found) else Unknown("malformed customer id")
        return self._outcome_of(response, lambda _: Unknown("not a customer of ours"))

    def card_fingerprint(self, payment_method: str) -> str | NotSent | Unknown | None:
        """The fingerprint of the card behind a PaymentMethod (the same for every token
        of one card); None when Stripe answered without one; the transport's NotSent or
        Unknown, or Unknown for a 5xx, when it could not answer (the breaker counts those).
        A read: sends nothing."""
        if not PM_RE.fullmatch(payment_method):
            return None
        try:
            response = self.session.get(
                f"{self.api_base}/v1/payment_methods/{payment_method}",
                timeout=self.policy.timeout,
            )
        except requests.RequestException as exc:
            return classify_exception(exc)
        if response.status_code >= 500:
            return Unknown(f"provider error {response.status_code}")
        return card_fingerprint_of(json_object(response)) if response.status_code == 200 else None


def card_fingerprint_of(method: object) -> str | None:
    """`card.fingerprint` of a PaymentMethod object from Stripe (untrusted JSON)."""
    card = method.get("card") if isinstance(method, dict) else None
    found = card.get("fingerprint") if isinstance(card, dict) else None
    return found if isinstance(found, str) and re.fullmatch(r"[A-Za-z0-9]{1,64}", found) else None
