"""Every provider request passes the one gateway: the breaker admits and records it,
metrics count it. Shown for the two that used to bypass it: the key-less provider's
re-send during reconciliation (a Braintree refund its sale provably lacks), and the
webhook backfill."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from flask import Flask

from extensions import db
from jobs.webhooks import backfill_webhooks_job
from models import Payment, PaymentStatus, Refund, RefundStatus
from models.types import utcnow
from providers.braintree.client import SETTLE_S
from resilience.gateway import PROVIDER_CALLS
from services.platform.provider_clients import breaker_for
from services.refunds.issue import refund_payment
from tests.helpers import charged, committed_payment, reconcile_refund


def _calls(provider: str, operation: str, outcome: str) -> float:
    return PROVIDER_CALLS.labels(provider, operation, outcome)._value.get()


def _failures(app: Flask, provider: str) -> int:
    """Failures the shared breaker recorded (a fast success is not sent to Redis)."""
    with app.app_context():
        return int(breaker_for(provider).snapshot()["window_failures"])


def _unknown_braintree_refund(app: Flask, sandbox: Any) -> int:
    """A refund of a settled Braintree sale that may have been sent (the answer was lost)
    long enough ago that the sale's list of credits proves it was not made: the key-less
    re-send's case."""
    payment_id = charged(app, committed_payment(app, provider="braintree"))
    sandbox.age_braintree(3600)  # settled: refunded by a credit
    with app.app_context():
        refund, _ = refund_payment(payment_id, 300, "customer asked", "ops", uuid.uuid4())
        sent = utcnow() - timedelta(seconds=SETTLE_S + 20)
        refund.status, refund.first_sent_at, refund.last_sent_at = RefundStatus.UNKNOWN, sent, sent
        refund.send_count = 1
        db.session.commit()
        return refund.id


def _refund_status(app: Flask, refund_id: int) -> RefundStatus:
    with app.app_context():
        found = db.session.get(Refund, refund_id)
        assert found is not None
        return found.status


def test_the_key_less_re_send_goes_through_the_gateway(app: Flask, sandbox: Any) -> None:
    refund_id = _unknown_braintree_refund(app, sandbox)
    before = _calls("braintree", "refund_resend", "Succeeded")
    with app.app_context():
        reconcile_refund(refund_id)
    assert _refund_status(app, refund_id) == RefundStatus.SUCCEEDED
    assert _calls("braintree", "refund_resend", "Succeeded") == before + 1


def test_a_failed_re_send_counts_against_the_breaker(app: Flask, sandbox: Any) -> None:
    refund_id = _unknown_braintree_refund(app, sandbox)
    sandbox.add_fault("error", status=500, dialect="braintree", endpoint="refund")
    before = _failures(app, "braintree")
    with app.app_context():
        reconcile_refund(refund_id)
    assert _refund_status(app, refund_id) == RefundStatus.UNKNOWN
    assert _failures(app, "braintree") == before + 1  # the lookup succeeded; the re-send failed


def test_an_open_circuit_holds_the_re_send_back(app: Flask, sandbox: Any) -> None:
    refund_id = _unknown_braintree_refund(app, sandbox)
    asked_before = len(sandbox.requests_log(dialect="braintree"))
    with app.app_context():
        breaker_for("braintree").force("open", actor="test", reason="braintree is down")
        reconcile_refund(refund_id)
    assert _refund_status(app, refund_id) == RefundStatus.UNKNOWN
    assert len(sandbox.requests_log(dialect="braintree")) == asked_before  # not asked at all


def test_backfill_goes_through_the_breaker(app: Flask, sandbox: Any) -> None:
    before = _calls("stripe", "backfill", "EventPage")
    with app.app_context():
        assert backfill_webhooks_job("stripe") == {}
    assert _calls("stripe", "backfill", "EventPage") == before + 1
    sandbox.add_fault("error", status=503, dialect="stripe", endpoint="events")
    with app.app_context():
        assert backfill_webhooks_job("stripe") == {}
    assert _failures(app, "stripe") == 1  # a backfill that got no answer is a failure
    sandbox.clear_faults()
    with app.app_context():
        breaker_for("stripe").force("open", actor="test", reason="stripe is down")
    asked = len(sandbox.requests_log(endpoint="events"))
    with app.app_context():
        assert backfill_webhooks_job("stripe") == {}
    assert len(sandbox.requests_log(endpoint="events")) == asked  # the open circuit asked nothing


def test_a_request_that_raises_still_counts_against_the_breaker(app: Flask) -> None:
    from resilience.gateway import CallContext
    from services.platform.provider_clients import gateway_for

    def broken() -> None:
        raise RuntimeError("a bug in the client")

    with app.app_context():
        before = _failures(app, "stripe")
        try:
            gateway_for("stripe").call(CallContext("test"), broken)
        except RuntimeError:
            pass
        else:
            raise AssertionError("the exception must reach the caller")
        assert _failures(app, "stripe") == before + 1


def test_before_runs_only_once_the_breaker_admitted_the_call(app: Flask) -> None:
    from resilience.gateway import CallContext, is_refused
    from services.platform.provider_clients import gateway_for

    ran: list[str] = []
    with app.app_context():
        gateway = gateway_for("stripe")
        breaker_for("stripe").force("open", actor="test", reason="stripe is down")
        refused = gateway.call(
            CallContext("test"), lambda: ran.append("call"), before=lambda: ran.append("before")
        )
        assert is_refused(refused)
        assert ran == []
        breaker_for("stripe").force("reset", actor="test", reason="stripe is back")
        gateway.call(
            CallContext("test"), lambda: ran.append("call"), before=lambda: ran.append("before")
        )
    assert ran == ["before", "call"]


def test_a_refused_key_puts_the_provider_in_authentication_failed_until_a_call_works(
    app: Flask, sandbox: Any, admin_client: Any
) -> None:
    """A revoked key (401/403) used to defer charges forever with one log line: now the
    dashboard shows it and /metrics carries provider_auth_failed for the alert."""
    from tests.helpers import charge_payment, committed_payment, payment

    sandbox.add_fault("error", status=401, count=1, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
        failed = breaker_for("stripe").snapshot()["auth_failed"]
    assert failed is not None and failed["status"] == 401
    assert payment(app, payment_id).status == PaymentStatus.PENDING  # deferred, not failed
    assert "Authentication failed" in admin_client.get("/admin/").get_data(as_text=True)
    assert 'provider_auth_failed{provider="stripe"} 1.0' in admin_client.get("/metrics").get_data(
        as_text=True
    )
    with app.app_context():
        db.session.execute(
            db.update(Payment).where(Payment.id == payment_id).values(next_attempt_at=None)
        )
        db.session.commit()
        charge_payment(payment_id)  # the key works again
        assert breaker_for("stripe").snapshot()["auth_failed"] is None
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
