"""Every provider request passes the one gateway: the breaker admits and records it,
metrics count it. Shown for the two that used to bypass it: the key-less provider's
re-send during reconciliation, and the webhook backfill."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Flask

from extensions import db
from jobs.webhooks import backfill_webhooks_job
from models import Payment, PaymentStatus
from models.types import utcnow
from providers.braintree.client import ABSENT_AFTER_S
from resilience.gateway import PROVIDER_CALLS
from services.platform.provider_clients import breaker_for
from tests.helpers import committed_topup, payment, reconcile_payment


def _calls(provider: str, operation: str, outcome: str) -> float:
    return PROVIDER_CALLS.labels(provider, operation, outcome)._value.get()


def _failures(app: Flask, provider: str) -> int:
    """Failures the shared breaker recorded (a fast success is not sent to Redis)."""
    with app.app_context():
        return int(breaker_for(provider).snapshot()["window_failures"])


def _unknown_braintree_payment(app: Flask) -> int:
    """May have been sent (the answer was lost) long enough ago that Braintree's search
    proves it absent, and Braintree never got it."""
    payment_id = committed_topup(app, 800, provider="braintree")
    with app.app_context():
        found = db.session.get(Payment, payment_id)
        assert found is not None
        sent = utcnow() - timedelta(seconds=ABSENT_AFTER_S + 20)
        found.status, found.first_sent_at, found.last_sent_at = PaymentStatus.UNKNOWN, sent, sent
        found.send_count = 1
        db.session.commit()
    return payment_id


def test_the_key_less_re_send_goes_through_the_gateway(app: Flask, sandbox: Any) -> None:
    payment_id = _unknown_braintree_payment(app)
    before = _calls("braintree", "charge_resend", "Succeeded")
    with app.app_context():
        reconcile_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert _calls("braintree", "charge_resend", "Succeeded") == before + 1


def test_a_failed_re_send_counts_against_the_breaker(app: Flask, sandbox: Any) -> None:
    payment_id = _unknown_braintree_payment(app)
    sandbox.add_fault("error", status=503, dialect="braintree", endpoint="sale")
    before = _failures(app, "braintree")
    with app.app_context():
        reconcile_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    assert _failures(app, "braintree") == before + 1  # the lookup succeeded; the re-send failed


def test_an_open_circuit_holds_the_re_send_back(app: Flask, sandbox: Any) -> None:
    payment_id = _unknown_braintree_payment(app)
    with app.app_context():
        breaker_for("braintree").force("open", actor="test", reason="braintree is down")
        reconcile_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    assert sandbox.requests_log(dialect="braintree") == []  # not asked at all


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
