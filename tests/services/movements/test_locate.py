"""One rule finds the row an event names, for every kind: our own id first, then our
key (Braintree's order_id), then the provider's id; a reference that cannot be ours
is an error (the event is set aside), another provider's row is never found."""

from __future__ import annotations

import pytest
from flask import Flask

from extensions import db
from models import Payment, Refund
from models.types import utcnow
from providers.events import ProviderEvent
from providers.outcomes import Report
from services.movements import locate
from tests.factories import make_customer, make_order, make_payment, make_refund


def _event(
    provider_id: str | None = None, our_id: str | None = None, reference: str | None = None
) -> ProviderEvent:
    report = Report(our_id=our_id, reference=reference)
    return ProviderEvent("evt_1", "t", utcnow(), None, provider_id, report)


def test_our_id_then_our_key_then_the_providers_id(app_ctx: Flask) -> None:
    payment = make_payment(make_order(make_customer()))
    payment.provider_payment_id = "pi_theirs"
    other = make_payment(make_order(make_customer()))
    db.session.flush()
    cols = (Payment.provider_payment_id, Payment.id)
    by_id = locate.find(Payment, "stripe", _event("pi_theirs", our_id=str(other.id)), *cols)
    assert by_id is not None and by_id.id == other.id  # our own reference wins
    by_key = locate.find(Payment, "stripe", _event(reference=str(payment.idempotency_key)), *cols)
    assert by_key is not None and by_key.id == payment.id
    by_theirs = locate.find(Payment, "stripe", _event("pi_theirs"), *cols)
    assert by_theirs is not None and by_theirs.id == payment.id
    assert locate.find(Payment, "braintree", _event("pi_theirs"), *cols) is None
    assert locate.find(Payment, "stripe", _event("pi_nobody"), *cols) is None


def test_the_same_rule_finds_a_refund(app_ctx: Flask) -> None:
    refund = make_refund(make_payment(make_order(make_customer())))
    refund.provider_refund_id = "re_theirs"
    db.session.flush()
    found = locate.find(Refund, "stripe", _event("re_theirs"), Refund.provider_refund_id, Refund.id)
    assert found is not None and found.id == refund.id


@pytest.mark.parametrize(
    ("report", "message"),
    [
        ({"our_id": "12abc"}, "metadata.payment_id '12abc' is not a payment id"),
        ({"our_id": "99999999999"}, "is not a payment id"),
        ({"reference": "not-a-key"}, "reference 'not-a-key' is not one of ours"),
    ],
)
def test_a_reference_that_cannot_be_ours_is_an_error(
    app_ctx: Flask, report: dict[str, str | None], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        locate.find(Payment, "stripe", _event(**report), Payment.provider_payment_id, Payment.id)
