"""A minimal third provider, defined in the test tree only: the extension test registers
it with one line and gets its settings, queue, worker program and webhook route."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from providers.base import Capabilities, ChargeRequest, RefundRequest
from providers.events import ProviderEvent, WebhookError, event_time, required_field
from providers.http import HttpPolicy
from providers.outcomes import Absent, EventPage, LookupOutcome, Outcome, Report, Succeeded
from providers.spec import ProviderSpec, SettingsContext, WebhookScheme

DEV_WEBHOOK_SECRET = "toywh_dev"


class ToyProvider:
    """Charges everything, remembers nothing: enough to exercise the plumbing."""

    name = "toy"
    capabilities = Capabilities(
        supports_idempotency_keys=True,
        key_lifetime_s=None,
        replay_window_s=None,
        can_replay=False,
        can_lookup_by_id=False,
        can_lookup_by_reference=False,
    )

    def __init__(self, greeting: str) -> None:
        self.greeting = greeting

    def charge(self, request: ChargeRequest) -> Outcome:
        report = Report(request.amount_minor, request.currency, str(request.payment_id))
        return Succeeded(f"toy_{request.payment_id}", report)

    def lookup(self, request: ChargeRequest) -> LookupOutcome:
        return Absent("the toy remembers nothing")

    def refund(self, request: RefundRequest) -> Outcome:
        report = Report(request.amount_minor, request.currency, str(request.refund_id))
        return Succeeded(f"toy_re_{request.refund_id}", report)

    def lookup_refund(self, request: RefundRequest) -> LookupOutcome:
        return Absent("the toy remembers nothing")

    def cancel(self, request: ChargeRequest) -> Outcome:
        return self.charge(request)  # the toy never waits for authentication

    def undelivered_events(self, after: str | None = None) -> EventPage | None:
        return EventPage([])


def verify(headers: Mapping[str, str], body: bytes, secret_value: str, now: float) -> None:
    expected = hmac.new(secret_value.encode(), body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, headers.get("x-toy-signature", "")):
        raise WebhookError("no valid signature")


def parse(payload: dict[str, Any]) -> ProviderEvent:
    return ProviderEvent(
        required_field(payload, "id", str, ""),
        required_field(payload, "type", str, ""),
        event_time(required_field(payload, "created", int, "")),
        None,  # no event of the toy moves a payment
        None,
    )


def read_settings(env: Mapping[str, str], context: SettingsContext) -> dict[str, Any]:
    return {
        "TOY_GREETING": env.get("TOY_GREETING", "hello"),
        "TOY_WEBHOOK_SECRET": context.secret(env, "TOY_WEBHOOK_SECRET", DEV_WEBHOOK_SECRET),
    }


def build(config: Mapping[str, Any], policy: HttpPolicy) -> ToyProvider:
    return ToyProvider(config["TOY_GREETING"])


SPEC = ProviderSpec(
    name="toy",
    read_settings=read_settings,
    build=build,
    webhook=WebhookScheme(verify, parse, "TOY_WEBHOOK_SECRET"),
    dev_secrets=frozenset({DEV_WEBHOOK_SECRET}),
    slots=3,
    lists_undelivered_events=True,  # an empty list: the backfill asks it
    # No card script of its own: the pages offer its test tokens (development only).
    test_cards=(("card_toy", "Test card: approved"),),
)
