"""Stripe's form encoding as the sandbox decodes it, and what it refuses."""

from __future__ import annotations

import pytest

from sandbox.stripe.params import CREATE, ParamError, decode, integer, limit, metadata


def test_nested_hashes_and_both_list_forms() -> None:
    params = decode(
        [
            ("amount", "100"),
            ("metadata[payment_id]", "7"),
            ("automatic_payment_methods[enabled]", "true"),
            ("payment_method_types[0]", "card"),
            ("payment_method_types[]", "sepa_debit"),
        ],
        CREATE,
    )
    assert params == {
        "amount": "100",
        "metadata": {"payment_id": "7"},
        "automatic_payment_methods": {"enabled": "true"},
        "payment_method_types": ["card", "sepa_debit"],
    }


@pytest.mark.parametrize("name", ["capture", "amount]", "1amount"])
def test_unknown_parameters_are_refused_like_stripe(name: str) -> None:
    with pytest.raises(ParamError) as refused:
        decode([(name, "x")], CREATE)
    assert refused.value.code == "parameter_unknown"


@pytest.mark.parametrize(
    ("params", "call", "code"),
    [
        ({}, lambda p: integer(p, "amount", required=True), "parameter_missing"),
        ({"amount": "-1"}, lambda p: integer(p, "amount"), "parameter_invalid"),
        ({"limit": "101"}, limit, "parameter_invalid"),
        ({"metadata": "x"}, metadata, "parameter_invalid"),
    ],
)
def test_values_are_checked(params: dict, call: object, code: str) -> None:
    with pytest.raises(ParamError) as refused:
        call(params)  # type: ignore[operator]  # each parser takes its own keyword set
    assert refused.value.code == code
    assert limit({}) == 10  # Stripe's default page size
