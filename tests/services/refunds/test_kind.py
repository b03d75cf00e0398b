"""Refunds against the live sandbox, both providers: full and partial, the effect on the
order, a lost answer reconciled to one refund, a refused refund's money back in place."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
import requests
from flask import Flask

from extensions import db
from models import Order, OrderStatus, Payment, Refund, RefundStatus
from sandbox.context import DEFAULT_SEARCH_LAG_S
from services.movements.janitor import sweep_kind
from services.refunds.issue import refund_payment
from services.refunds.kind import REFUND
from tests.helpers import (
    charged,
    committed_payment,
    got,
    queued_job_ids,
    reconcile_refund,
    sandbox_refunds,
    send_refund,
)


def _refund(app: Flask, payment_id: int, amount: int | None = None) -> int:
    with app.app_context():
        refund, is_new = refund_payment(payment_id, amount, "customer asked", "ops", uuid.uuid4())
        assert is_new and refund.status == RefundStatus.PENDING
        return refund.id


def _state(app: Flask, refund_id: int) -> tuple[RefundStatus, str | None, OrderStatus | None]:
    with app.app_context():
        refund = db.session.get(Refund, refund_id)
        assert refund is not None
        order = db.session.get(Order, refund.order_id) if refund.order_id else None
        return refund.status, refund.provider_refund_id, order.status if order else None


@pytest.mark.parametrize(("provider", "refund_prefix"), [("stripe", "re_"), ("braintree", "")])
def test_partial_then_full_refund(
    app: Flask, sandbox: Any, provider: str, refund_prefix: str
) -> None:
    payment_id = charged(app, committed_payment(app, provider=provider))  # 1000 EUR
    sandbox.age_braintree(3600)  # settled: Braintree refunds part of a settled sale only
    first = _refund(app, payment_id, 300)
    assert queued_job_ids(app, provider) == [f"refund-{first}"]
    with app.app_context():
        send_refund(first)
    status, provider_id, order = _state(app, first)
    assert (
        status == RefundStatus.SUCCEEDED and provider_id and provider_id.startswith(refund_prefix)
    )
    assert order == OrderStatus.PARTIALLY_REFUNDED
    rest = _refund(app, payment_id)  # no amount: all that is left
    with app.app_context():
        send_refund(rest)
        assert got(Refund, rest).amount_minor == 700
    assert _state(app, rest)[2] == OrderStatus.REFUNDED
    refunds = sandbox_refunds(sandbox, dialect=provider)
    assert sorted(r["amount"] for r in refunds) == [300, 700]


def test_a_lost_answer_is_reconciled_to_one_refund(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))
    refund_id = _refund(app, payment_id)
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="refund")
    with app.app_context():
        send_refund(refund_id)
    assert _state(app, refund_id)[0] == RefundStatus.UNKNOWN  # never failed: it may be done
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    with app.app_context():
        reconcile_refund(refund_id)  # replays the create with the same key
    assert _state(app, refund_id)[0] == RefundStatus.SUCCEEDED
    assert len(sandbox_refunds(sandbox)) == 1


def test_a_whole_refund_of_an_unsettled_braintree_sale_is_its_void(
    app: Flask, sandbox: Any
) -> None:
    """Braintree refunds only settled sales; the whole of one not settled yet is voided,
    and that answer names the refund by its own sale (the chaos drill once sent three such
    refunds to review: the void's answer named nothing of ours)."""
    payment_id = charged(app, committed_payment(app, provider="braintree"))
    refund_id = _refund(app, payment_id)  # the whole of it
    with app.app_context():
        send_refund(refund_id)
    status, provider_id, order = _state(app, refund_id)
    assert status == RefundStatus.SUCCEEDED and order == OrderStatus.REFUNDED
    with app.app_context():
        sale_id = got(Payment, payment_id).provider_payment_id
    assert provider_id == sale_id  # the sale, voided
    voided = requests.get(f"{sandbox.url}/_sandbox/charges", timeout=5).json()["data"]
    assert [c["status"] for c in voided] == ["voided"]  # the card is not charged after all


def test_keyless_braintree_looks_up_before_sending_again(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app, provider="braintree"))
    sandbox.age_braintree(3600)  # settled: a partial refund is a credit then
    refund_id = _refund(app, payment_id, 400)
    sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="braintree", endpoint="refund")
    with app.app_context():
        send_refund(refund_id)
    assert _state(app, refund_id)[0] == RefundStatus.UNKNOWN
    sandbox.clear_faults()
    time.sleep(DEFAULT_SEARCH_LAG_S + 0.5)  # Braintree's search shows a credit late
    with app.app_context():
        reconcile_refund(refund_id)  # finds it by reference: never a second refund
    assert _state(app, refund_id)[0] == RefundStatus.SUCCEEDED
    assert [r["amount"] for r in sandbox_refunds(sandbox, dialect="braintree")] == [400]


def test_a_refund_that_provably_was_not_sent_is_deferred(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))
    refund_id = _refund(app, payment_id)
    sandbox.add_fault(
        "error", status=429, retry_after=30, dialect="stripe", endpoint="refund", phase="before"
    )
    with app.app_context():
        send_refund(refund_id)
        refund = db.session.get(Refund, refund_id)
        assert refund is not None and refund.status == RefundStatus.PENDING
        assert refund.first_sent_at is None and refund.next_attempt_at is not None
    assert sandbox_refunds(sandbox) == []


def test_the_sweep_finds_a_refund_whose_job_was_lost(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))
    refund_id = _refund(app, payment_id)
    from redis import Redis

    Redis.from_url(app.config["REDIS_URL"]).flushdb()  # the job is gone
    import time_machine

    from models.types import utcnow

    with time_machine.travel(utcnow().timestamp() + 120), app.app_context():
        assert sweep_kind(REFUND) == 1
    assert queued_job_ids(app) == [f"refund-{refund_id}"]


def test_a_refund_the_provider_refuses_outright_fails_instead_of_waiting_for_review(
    app: Flask, sandbox: Any
) -> None:
    """The reported hole: Stripe's 400 for a refund create names no refund, so the answer
    "did not match" and the refund sat in review with no way out; nothing was refunded."""
    payment_id = charged(app, committed_payment(app))
    sandbox.add_fault("error", status=400, count=1, dialect="stripe", endpoint="refund")
    refund_id = _refund(app, payment_id)
    with app.app_context():
        send_refund(refund_id)
        refund = db.session.get(Refund, refund_id)
        assert refund is not None
        assert refund.status == RefundStatus.FAILED, refund.status
        assert refund.failure_code == "invalid_request_error"
    assert sandbox_refunds(sandbox) == []
    assert _refund(app, payment_id) != refund_id  # the charge can still be refunded


def test_a_refunds_send_is_logged_with_its_attempt_number(app: Flask, sandbox: Any) -> None:
    """Issue 49 (b): a refund's call carried no attempt number (a charge's does), and was
    filed under its payment's id: it names the refund now."""
    from sqlalchemy import select

    from models import ProviderCall

    committed_payment(app)  # so that the payment's id is not the refund's
    payment_id = charged(app, committed_payment(app))
    with app.app_context():
        refund, _ = refund_payment(payment_id, 300, "one cup broke", "ops", uuid.uuid4())
        send_refund(refund.id)
        call = db.session.scalars(
            select(ProviderCall).where(ProviderCall.operation == "refund")
        ).one()
        assert call.attempt == 1
        assert refund.id != payment_id
        assert (call.subject_kind, call.subject_id) == ("refund", refund.id)
