"""Braintree's XML both ways: what its SDK sends is read (dashes or underscores, typed
values), what we answer carries Braintree's types; a document type is refused."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from sandbox.braintree.xml import MAX_BODY, XmlError, parse, render, render_collection


def test_a_request_is_read_with_its_types() -> None:
    body = (
        b"<transaction><amount>10.00</amount><order-id>p-1</order-id>"
        b'<options><submit_for_settlement type="boolean">true</submit_for_settlement></options>'
        b'<count type="integer">3</count><note nil="true" />'
        b'<ids type="array"><item>a</item><item>b</item></ids></transaction>'
    )
    assert parse(body) == (
        "transaction",
        {
            "amount": "10.00",
            "order_id": "p-1",
            "options": {"submit_for_settlement": True},
            "count": 3,
            "note": None,
            "ids": ["a", "b"],
        },
    )


@pytest.mark.parametrize(
    "body",
    [
        b'<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>',
        b"<transaction><amount>1</amount>",
        b"not xml",
        b"<x>" + b"a" * MAX_BODY + b"</x>",
        b'<x type="integer">ten</x>',
    ],
    ids=["entity", "unclosed", "text", "too large", "bad integer"],
)
def test_what_is_not_braintrees_xml_is_refused(body: bytes) -> None:
    with pytest.raises(XmlError):
        parse(body)


def test_an_answer_carries_braintrees_types() -> None:
    at = datetime(2026, 12, 6, 9, 0, tzinfo=UTC)
    written = render(
        "transaction",
        {
            "order_id": "p-1",
            "amount": Decimal("14"),
            "refund_ids": ["r1"],
            "is_ok": True,
            "count": 2,
            "created_at": at,
            "gateway_rejection_reason": None,
        },
    )
    assert written.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<transaction>')
    for part in (
        b"<order-id>p-1</order-id>",
        b"<amount>14.00</amount>",
        b'<refund-ids type="array"><refund-id>r1</refund-id></refund-ids>',
        b'<is-ok type="boolean">true</is-ok>',
        b'<count type="integer">2</count>',
        b'<created-at type="datetime">2026-12-06T09:00:00Z</created-at>',
        b'<gateway-rejection-reason nil="true" />',
    ):
        assert part in written, part
    many = render_collection("credit-card-transactions", "transaction", [{"id": "a"}, {"id": "b"}])
    assert b'<credit-card-transactions type="collection"><transaction><id>a</id>' in many
