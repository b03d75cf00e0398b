"""What every provider's webhooks share: the event as the payment needs it, the error a
bad delivery gets, and the parsing helpers each provider's scheme (providers/<name>/
webhooks.py) uses. Pure functions.

`headers` arguments are mappings with lower-case names.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from providers.outcomes import Report

SIGNATURE_TOLERANCE_S = 300  # Stripe's default: replays older (or newer) than 5 min are refused


class WebhookError(ValueError):
    """The request is not a valid provider event; the message is a short reason for the sender."""


@dataclass(frozen=True)
class DisputeFacts:
    """A dispute as the provider's event tells it (Stripe's dispute object)."""

    status: str
    reason: str
    amount_minor: int | None
    currency: str | None
    evidence_due_by: datetime | None
    # An inquiry, not a chargeback: the bank asks, the provider withdraws nothing.
    is_inquiry: bool = False


@dataclass(frozen=True)
class PayoutFacts:
    """A payout as the provider's event tells it (Stripe's payout object), unchecked: the
    handler checks each field against what it expects."""

    status: str
    amount_minor: int | None
    currency: str | None
    arrival_date: datetime | None
    failure_code: str | None


@dataclass(frozen=True)
class ProviderEvent:
    """A provider event reduced to what the payment needs."""

    event_id: str
    event_type: str
    created_at: datetime
    outcome: str | None  # "succeeded" | "failed" | None (no effect on payments)
    provider_id: str | None  # the provider's id of the event's row (an intent, a refund, ...)
    # Which payment, for how much, as the event says (our id or reference, amount, currency).
    report: Report = field(default_factory=Report)
    decline_code: str | None = None
    # What the event is about, the movement kind whose handler applies it: "charge" (a
    # payment), "refund" (provider_id is then the provider's refund id, and the
    # report echoes our refund: Stripe's metadata.refund_id, Braintree's order_id)
    # or "dispute".
    kind: str = "charge"
    # A refund's event: the provider's id of the payment it refunds (Stripe: the
    # payment_intent), which matches a refund made outside the shop to our payment.
    parent_payment_id: str | None = None
    # A dispute's event: provider_id is then the provider's dispute id, and
    # parent_payment_id the payment it disputes.
    dispute: DisputeFacts | None = None
    # A payout's event (kind "payout"): provider_id is then the provider's payout id.
    payout: PayoutFacts | None = None
    # A failure that takes back a success the provider reported (Braintree's settlement
    # declined: the sale's money never arrives): a succeeded payment fails, its effect
    # and entry reversed; any other failure never moves a success.
    takes_back_success: bool = False


def check_timestamp(raw: str, now: float) -> int:
    try:
        timestamp = int(raw)
    except ValueError:
        raise WebhookError("malformed signature timestamp") from None
    if abs(now - timestamp) > SIGNATURE_TOLERANCE_S:
        raise WebhookError("signature timestamp outside the tolerance")
    return timestamp


MAX_JSON_DEPTH = 32  # deeper than any provider's event or any request of our API
MAX_INTEGER_DIGITS = 30  # past any amount or count (Python refuses past 4300 digits)
MAX_EXACT_FLOAT = 2**53  # below it, a float holds every integer exactly


class JSONTextError(ValueError):
    """Well-formed JSON whose text cannot be stored or sent on: a control character
    (NUL among them) or a lone surrogate in a string."""


class JSONNumberError(ValueError):
    """Well-formed JSON with a number no field here can hold: past a float's range
    (1e400), NaN or Infinity, or an integer of more than MAX_INTEGER_DIGITS digits."""


def strict_json(body: str | bytes, *, is_integral_float_int: bool = False) -> Any:
    """JSON as every boundary here accepts it; ValueError naming the problem otherwise:
    not UTF-8 or not JSON (ValueError), nesting deeper than MAX_JSON_DEPTH (past about a
    thousand levels Python's parser raises RecursionError), a number out of range
    (JSONNumberError), NUL and other control characters or lone surrogates in strings
    (JSONTextError: none can be stored or sent on). With `is_integral_float_int`, a
    number written with a fraction or exponent whose value is a whole number (5.0, 5e2)
    is that integer, as JSON Schema counts it."""
    text = body.decode("utf-8") if isinstance(body, bytes) else body  # UnicodeDecodeError
    number = _integral_or_float if is_integral_float_int else _finite
    try:
        value = json.loads(
            text, parse_constant=_no_constant, parse_float=number, parse_int=_bounded_int
        )
    except RecursionError:
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels") from None
    _check(value)
    return value


def _no_constant(name: str) -> Any:
    raise JSONNumberError(f"{name} is not a number JSON allows")


def _finite(raw: str) -> float:
    number = float(raw)
    if not math.isfinite(number):
        raise JSONNumberError(f"{raw[:20]} is too large for a number")
    return number


def _integral_or_float(raw: str) -> float | int:
    number = _finite(raw)
    return int(number) if number.is_integer() and abs(number) < MAX_EXACT_FLOAT else number


def _bounded_int(raw: str) -> int:
    if len(raw.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise JSONNumberError(f"an integer of {len(raw)} digits is too large for a number")
    return int(raw)


def _check(value: Any) -> None:
    """Every key and string of a parsed JSON value can be stored and sent on as text, and
    it nests at most MAX_JSON_DEPTH levels (walked without recursion; the texts gathered
    and searched at once)."""
    if isinstance(value, str):
        _check_text(value)
    if not isinstance(value, dict | list):
        return
    texts: list[str] = []
    waiting = [(value, 1)]
    while waiting:
        item, depth = waiting.pop()
        if depth > MAX_JSON_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
        children: Iterable[Any] = item
        if isinstance(item, dict):
            texts.extend(item)
            children = item.values()
        for child in children:
            if isinstance(child, str):
                texts.append(child)
            elif isinstance(child, dict | list):
                waiting.append((child, depth + 1))
    _check_text("\n".join(texts))


# What no text here may hold: a control character other than tab, newline and carriage
# return (NUL among them), or a surrogate (json.loads joins every pair into one character,
# so one left is lone: no UTF-8 can carry it). One search per string, in C.
NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


def _check_text(text: str) -> None:
    found = NOT_TEXT.search(text)
    if found is None:
        return
    if found.group() >= "\ud800":
        raise JSONTextError("a JSON string holds a lone surrogate")
    raise JSONTextError(
        f"a JSON string holds the control character U+{ord(found.group()):04X}; "
        "only tab, newline and carriage return are text"
    )


def load_json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = strict_json(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise WebhookError(f"body is not JSON we accept: {exc}"[:200]) from None
    if not isinstance(payload, dict):
        raise WebhookError("body is not a JSON object")
    return payload


def required_field(obj: Any, key: str, kind: type, where: str) -> Any:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise WebhookError(f"missing or malformed field {where}{key}")
    return value


# The times a provider's event may carry: a year 1 or 9999 (and an offset that takes it
# past the calendar) is no provider's, and once stored it cannot be read back.
EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)


def event_time(value: int, field: str = "created") -> datetime:
    try:
        return bounded_time(datetime.fromtimestamp(value, UTC), field)
    except (OverflowError, OSError, ValueError):
        raise WebhookError(f"malformed field {field}") from None


def bounded_time(value: datetime, field: str) -> datetime:
    """A provider's time in UTC, from EARLIEST to LATEST; WebhookError naming the field
    otherwise (no zone, out of that range, past the calendar once in UTC)."""
    if value.tzinfo is None:
        raise WebhookError(f"malformed field {field}: no time zone")
    try:
        found = value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise WebhookError(f"malformed field {field}: out of range") from None
    if not EARLIEST <= found < LATEST:
        raise WebhookError(f"malformed field {field}: out of range")
    return found
