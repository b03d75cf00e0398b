"""Our Braintree client's refunds against the sandbox: a settled sale refunded by a credit
(in parts), an unsettled one voided whole (a part of it waits), a refund that may have
been sent looked up by our reference first, never made twice."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from providers.base import ChargeRequest, RefundRequest
from providers.braintree.client import BraintreeProvider
from providers.outcomes import Absent, Declined, NotSent, Succeeded
from services.movements import engine
from services.refunds.kind import REFUND
from tests.providers.support import POLICY


def _client(sandbox: Any) -> BraintreeProvider:
    return BraintreeProvider(
        sandbox.url, "sandbox_merchant", "sandbox_public_key", "sandbox_private_key", "EUR", POLICY
    )


def _sold(sandbox: Any, amount_minor: int = 3000) -> str:
    sale = _client(sandbox).charge(
        ChargeRequest(
            payment_id=1,
            idempotency_key=str(uuid.uuid4()),
            amount_minor=amount_minor,
            currency="EUR",
            payment_method="fake-valid-nonce",
        )
    )
    assert isinstance(sale, Succeeded)
    return sale.provider_payment_id


def _refund(sale_id: str, amount_minor: int, **more: Any) -> RefundRequest:
    return RefundRequest(
        refund_id=1,
        idempotency_key=more.pop("key", str(uuid.uuid4())),
        payment_id=1,
        provider_payment_id=sale_id,
        amount_minor=amount_minor,
        currency="EUR",
        **more,
    )


def test_a_settled_sale_is_refunded_in_parts_by_credits(sandbox: Any) -> None:
    sale_id = _sold(sandbox)
    sandbox.age_braintree(60)
    part = _client(sandbox).refund(_refund(sale_id, 1000))
    assert isinstance(part, Succeeded) and part.provider_payment_id != sale_id
    assert part.report.amount_minor == 1000
    too_much = _client(sandbox).refund(_refund(sale_id, 2001))
    assert isinstance(too_much, Declined) and too_much.code == "validation_91521"


def test_an_unsettled_sale_is_voided_whole_and_a_part_of_it_waits(sandbox: Any) -> None:
    whole = _sold(sandbox, 3100)
    request = _refund(whole, 3100)
    voided = _client(sandbox).refund(request)
    assert isinstance(voided, Succeeded) and voided.provider_payment_id == whole
    # It names the refund by its own sale, and says what that sale was for.
    report = voided.report
    assert (report.amount_minor, report.currency, report.reference) == (
        3100,
        "EUR",
        request.reference,
    )
    found = _client(sandbox).lookup_refund(
        _refund(whole, 3100, key=request.idempotency_key, first_sent_at=datetime.now(UTC))
    )
    assert found == voided  # looked up: the voided sale is this refund
    part = _client(sandbox).refund(_refund(_sold(sandbox, 3200), 100))
    assert isinstance(part, NotSent) and part.retry_after_s is not None


def test_a_refund_that_may_have_been_sent_is_looked_up_first(sandbox: Any) -> None:
    sale_id = _sold(sandbox, 3300)
    sandbox.age_braintree(60)
    key = str(uuid.uuid4())
    made = _client(sandbox).refund(_refund(sale_id, 500, key=key))
    assert isinstance(made, Succeeded)
    sandbox.age_braintree(5)  # the search's index has it
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    again = _refund(sale_id, 500, key=key, first_sent_at=long_ago, last_sent_at=long_ago)
    assert _client(sandbox).lookup_refund(again) == made
    # The engine's one send path asks first (services/movements/engine.send_once).
    assert engine.send_once(REFUND, _client(sandbox), again, long_ago) == made  # not resent
    never = _refund(sale_id, 500, first_sent_at=long_ago, last_sent_at=long_ago)
    assert isinstance(_client(sandbox).lookup_refund(never), Absent)
