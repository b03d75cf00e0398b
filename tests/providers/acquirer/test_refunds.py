"""The acquirer's refunds (no keys): a refund that may have been sent is looked up by
reference before anything is sent again."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from providers.base import RefundRequest
from providers.outcomes import Absent, Declined, Succeeded
from tests.providers.acquirer.support import charge_request
from tests.providers.acquirer.support import client as acquirer_client


def test_refund_lookup_and_no_second_refund(sandbox: Any) -> None:
    acquirer = acquirer_client(sandbox)
    paid = acquirer.charge(charge_request())
    assert isinstance(paid, Succeeded)
    request = RefundRequest(
        refund_id=3,
        idempotency_key=str(uuid.uuid4()),
        payment_id=5,
        provider_payment_id=paid.provider_payment_id,
        amount_minor=300,
        currency="EUR",
    )
    assert isinstance(acquirer.lookup_refund(request), Absent)  # never sent
    done = acquirer.refund(request)
    assert isinstance(done, Succeeded) and done.report.reference == request.idempotency_key
    again = acquirer.refund(
        RefundRequest(**{**request.__dict__, "first_sent_at": datetime.now(UTC)})
    )
    assert isinstance(again, Succeeded) and again.provider_payment_id == done.provider_payment_id
    assert len(sandbox.requests_log(dialect="acquirer", endpoint="refund")) == 1
    too_much = acquirer.refund(
        RefundRequest(
            **{**request.__dict__, "idempotency_key": str(uuid.uuid4()), "amount_minor": 701}
        )
    )
    assert isinstance(too_much, Declined) and too_much.code == "amount_exceeds_remaining"
