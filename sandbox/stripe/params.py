"""Stripe's form encoding (`metadata[k]=v`, `types[0]=card`, `types[]=card`) decoded,
with Stripe's answers for what it refuses: 400 `parameter_unknown`, and a typed check
of each value the sandbox acts on."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

KEY_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)((?:\[[^\[\]]*\])*)$")

CREATE = frozenset(
    {
        "allowed_payment_method_types",
        "amount",
        "automatic_payment_methods",
        "capture_method",
        "confirm",
        "confirmation_method",
        "currency",
        "customer",
        "description",
        "error_on_requires_action",
        "expand",
        "metadata",
        "off_session",
        "payment_method",
        "payment_method_types",
        "receipt_email",
        "return_url",
        "statement_descriptor",
        "statement_descriptor_suffix",
        "use_stripe_sdk",
    }
)
UPDATE = frozenset(
    {
        "amount",
        "currency",
        "description",
        "expand",
        "metadata",
        "payment_method",
        "receipt_email",
        "statement_descriptor",
        "statement_descriptor_suffix",
    }
)
CONFIRM = frozenset(
    {
        "error_on_requires_action",
        "expand",
        "off_session",
        "payment_method",
        "return_url",
        "use_stripe_sdk",
    }
)
CANCEL = frozenset({"cancellation_reason", "expand"})
CAPTURE = frozenset({"amount_to_capture", "expand", "final_capture", "metadata"})
RETRIEVE = frozenset({"client_secret", "expand"})
LIST = frozenset({"created", "customer", "ending_before", "expand", "limit", "starting_after"})
SEARCH = frozenset({"expand", "limit", "page", "query"})
EVENTS = frozenset(
    {
        "created",
        "delivery_success",
        "ending_before",
        "expand",
        "limit",
        "starting_after",
        "type",
        "types",
    }
)
CAPTURE_METHODS = ("automatic", "automatic_async", "manual")
CANCELLATION_REASONS = ("duplicate", "fraudulent", "requested_by_customer", "abandoned")


# Stripe's published minimum charge amounts, smallest units (a few of them; any other
# currency: 1). The sandbox keeps its own copy of the published table on purpose.
MINIMUM_CHARGE = {"usd": 50, "eur": 50, "gbp": 30, "jpy": 50, "chf": 50, "cad": 50, "sek": 300}


class ParamError(ValueError):
    """A request Stripe would refuse with 400 invalid_request_error."""

    def __init__(self, message: str, param: str, code: str = "parameter_invalid") -> None:
        super().__init__(message)
        self.param = param
        self.code = code


def decode(pairs: Iterable[tuple[str, str]], allowed: frozenset[str]) -> dict[str, Any]:
    """Nested params from form or query pairs; raises ParamError for unknown names."""
    params: dict[str, Any] = {}
    for key, value in pairs:
        match = KEY_RE.match(key)
        if match is None:
            raise ParamError(f"Invalid parameter name: {key}", key, "parameter_unknown")
        name, rest = match.group(1), match.group(2)
        if name not in allowed:
            raise ParamError(f"Received unknown parameter: {name}", name, "parameter_unknown")
        parts = re.findall(r"\[([^\[\]]*)\]", rest)
        _put(params, name, parts, value)
    return params


def _put(target: dict[str, Any], name: str, parts: list[str], value: str) -> None:
    if not parts:
        target[name] = value
        return
    if parts[0] == "" or parts[0].isdigit():  # a list: x[]=a or x[0]=a
        items = target.setdefault(name, [])
        if not isinstance(items, list):
            raise ParamError(f"Invalid array: {name}", name)
        items.append(value)
        return
    inner = target.setdefault(name, {})
    if not isinstance(inner, dict):
        raise ParamError(f"Invalid hash: {name}", name)
    _put(inner, parts[0], parts[1:], value)


def integer(params: dict[str, Any], name: str, *, required: bool = False) -> int | None:
    raw = params.get(name)
    if raw is None:
        if required:
            raise ParamError(f"Missing required param: {name}.", name, "parameter_missing")
        return None
    if not isinstance(raw, str) or not raw.isdigit() or len(raw) > 12:
        raise ParamError(f"Invalid integer: {raw}", name)
    return int(raw)


def boolean(params: dict[str, Any], name: str) -> bool:
    raw = params.get(name, "false")
    if raw not in ("true", "false"):
        raise ParamError(f"Invalid boolean: {raw}", name)
    return raw == "true"


def choice(params: dict[str, Any], name: str, options: tuple[str, ...]) -> str | None:
    raw = params.get(name)
    if raw is not None and raw not in options:
        raise ParamError(
            f"Invalid {name}: must be one of {', '.join(options)}", name, "parameter_invalid"
        )
    return raw


def metadata(params: dict[str, Any]) -> dict[str, str]:
    raw = params.get("metadata", {})
    if raw == "":
        return {}
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise ParamError("Invalid hash: metadata", "metadata")
    if len(raw) > 50:
        raise ParamError("metadata may have at most 50 keys", "metadata")
    return dict(raw)


CREATED_OPERATORS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def created_bounds(params: dict[str, Any]) -> tuple[str, tuple[int, ...]]:
    """SQL over a `created` column for Stripe's `created` list filter: an exact unix time
    (`created=N`) or bounds (`created[gte]=N&created[lt]=M`); raises ParamError."""
    raw = params.get("created")
    if raw is None:
        return "1 = 1", ()
    if isinstance(raw, str):
        return "created = ?", (_unix_time(raw),)
    if not isinstance(raw, dict) or not raw or set(raw) - set(CREATED_OPERATORS):
        raise ParamError("Invalid created: use created[gt|gte|lt|lte]=<unix time>", "created")
    clauses = [f"created {CREATED_OPERATORS[op]} ?" for op in raw]
    return " AND ".join(clauses), tuple(_unix_time(value) for value in raw.values())


def _unix_time(raw: object) -> int:
    if not isinstance(raw, str) or not raw.isdigit() or len(raw) > 12:
        raise ParamError(f"Invalid timestamp: {str(raw)[:40]}", "created")
    return int(raw)


def limit(params: dict[str, Any]) -> int:
    """Stripe's page size: 10 by default, 1 to 100."""
    value = integer(params, "limit")
    if value is None:
        return 10
    if not 1 <= value <= 100:
        raise ParamError("limit must be between 1 and 100", "limit")
    return value
