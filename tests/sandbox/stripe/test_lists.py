"""Stripe's search query language and page tokens, as the sandbox understands them."""

from __future__ import annotations

import pytest

from sandbox.stripe.lists import decode_page, encode_page, search_condition
from sandbox.stripe.params import ParamError


@pytest.mark.parametrize(
    ("query", "args"),
    [
        ("metadata['payment_id']:'7'", ("7",)),
        ('status:"succeeded" AND amount>1000', ("succeeded", 1000)),
        ("-currency:'usd' OR created<=1800000000", ("usd", 1800000000)),
        ("customer:null", ()),
        ("metadata['order']~'A-1'", ("%A-1%",)),
    ],
)
def test_supported_clauses(query: str, args: tuple[object, ...]) -> None:
    sql, bound = search_condition(query)
    assert bound == args and sql.startswith("(")


@pytest.mark.parametrize(
    "query",
    [
        "",
        "amount:1 AND status:'x' OR amount:2",  # AND and OR mixed
        "description:'mug'",  # not a searchable field here
        "metadata['k']~'ab'",  # substring too short
        " AND ".join(["amount:1"] * 11),
    ],
)
def test_unsupported_queries_are_400s(query: str) -> None:
    with pytest.raises(ParamError):
        search_condition(query)


def test_page_tokens_round_trip_and_refuse_garbage() -> None:
    assert decode_page(encode_page(42)) == 42 and decode_page(None) is None
    for token in ("%%%", encode_page(1).replace("cm93", "eHh4")):
        with pytest.raises(ParamError):
            decode_page(token)
