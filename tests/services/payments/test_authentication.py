"""3-D Secure against the live sandbox: a payment that requires action waits for its
customer, settles by the return lookup or the webhook (whichever comes first), and is
cancelled when abandoned; a lost cancel is unknown and reconciled."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from typing import Any

import requests
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from extensions import db
from models import Order, OrderStatus, Payment, PaymentStatus, PaymentTransition
from models.types import utcnow
from services.payments.authentication import (
    ABANDONED,
    cancel_abandoned,
    check_authentication,
    sweep_abandoned,
)
from tests.helpers import (
    charge_payment,
    committed_payment,
    payment,
    queued_job_ids,
    reconcile_payment,
    run_maintenance_jobs,
    scheduled_job_ids,
    signed_post,
)
from tests.sandbox_support import answer_challenge

THREE_DS = "pm_card_authenticationRequired"


def _awaiting(app: Flask) -> int:
    payment_id = committed_payment(app, payment_method=THREE_DS)
    with app.app_context():
        charge_payment(payment_id)
    return payment_id


def _transitions(app: Flask, payment_id: int) -> int:
    with app.app_context():
        return int(
            db.session.scalar(
                select(func.count()).where(PaymentTransition.payment_id == payment_id)
            )
            or 0
        )


def _stripe_get(sandbox: Any, path: str) -> dict[str, Any]:
    response = requests.get(
        f"{sandbox.url}/v1/{path}", headers={"Authorization": "Bearer sk_test_sandbox"}, timeout=5
    )
    return dict(response.json())


def _intent(sandbox: Any, intent_id: str) -> dict[str, Any]:
    return _stripe_get(sandbox, f"payment_intents/{intent_id}")


def _succeeded_event(sandbox: Any) -> dict[str, Any]:
    """The payment_intent.succeeded event the sandbox made, as Stripe would deliver it."""
    found = next(e for e in sandbox.events() if e["type"] == "payment_intent.succeeded")
    return _stripe_get(sandbox, f"events/{found['id']}")


def _due_now(app: Flask, payment_id: int) -> None:
    with app.app_context():
        row = db.session.get(Payment, payment_id)
        assert row is not None
        row.next_reconcile_at = utcnow() - timedelta(seconds=1)
        db.session.commit()


def test_a_card_that_needs_authentication_waits_for_the_customer(app: Flask, sandbox: Any) -> None:
    payment_id = _awaiting(app)
    waiting = payment(app, payment_id)
    assert waiting.status == PaymentStatus.REQUIRES_ACTION
    assert waiting.action_url and waiting.action_url.startswith(f"{sandbox.url}/3d_secure/")
    assert waiting.provider_payment_id and waiting.first_sent_at
    deadline = waiting.first_sent_at + timedelta(seconds=app.config["SCA_TIMEOUT_S"])
    assert waiting.next_reconcile_at == deadline
    assert sandbox.succeeded_charges(str(payment_id)) == 0
    # The charge asked Stripe to send the customer back to our return page.
    redirect = _intent(sandbox, waiting.provider_payment_id or "")["next_action"]
    expected = f"{app.config['PUBLIC_URL']}/payments/{payment_id}/return"
    assert redirect["redirect_to_url"]["return_url"] == expected


def test_completed_authentication_succeeds_on_the_customers_return(
    app: Flask, sandbox: Any
) -> None:
    payment_id = _awaiting(app)
    back_to = answer_challenge(payment(app, payment_id).action_url or "")
    assert back_to.startswith(f"{app.config['PUBLIC_URL']}/payments/{payment_id}/return?")
    assert "redirect_status=succeeded" in back_to
    with app.app_context():
        check_authentication(payment_id)
    done = payment(app, payment_id)
    assert done.status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1
    with app.app_context():
        order = db.session.get(Order, done.order_id)
        assert order is not None and order.status == OrderStatus.PAID


def test_failed_authentication_fails_the_payment(app: Flask, sandbox: Any) -> None:
    payment_id = _awaiting(app)
    answer_challenge(payment(app, payment_id).action_url or "", is_completed=False)
    with app.app_context():
        check_authentication(payment_id)
    failed = payment(app, payment_id)
    assert failed.status == PaymentStatus.FAILED
    assert failed.decline_code == "payment_intent_authentication_failure"
    assert sandbox.succeeded_charges(str(payment_id)) == 0


def test_a_lookup_before_the_customer_answers_changes_nothing(app: Flask, sandbox: Any) -> None:
    payment_id = _awaiting(app)
    before = _transitions(app, payment_id)
    with app.app_context():
        check_authentication(payment_id)  # the customer came back without answering
    assert payment(app, payment_id).status == PaymentStatus.REQUIRES_ACTION
    assert _transitions(app, payment_id) == before


def test_the_webhook_first_then_the_return_is_a_no_op(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = _awaiting(app)
    answer_challenge(payment(app, payment_id).action_url or "")
    assert signed_post(client, _succeeded_event(sandbox)).status_code == 200
    run_maintenance_jobs(app)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    settled = _transitions(app, payment_id)
    with app.app_context():
        check_authentication(payment_id)  # finds the payment settled: no lease, no call
    assert _transitions(app, payment_id) == settled
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_the_return_first_then_the_webhook_is_a_no_op(
    app: Flask, client: FlaskClient, sandbox: Any
) -> None:
    payment_id = _awaiting(app)
    answer_challenge(payment(app, payment_id).action_url or "")
    with app.app_context():
        check_authentication(payment_id)
    settled = _transitions(app, payment_id)
    assert signed_post(client, _succeeded_event(sandbox)).status_code == 200
    run_maintenance_jobs(app)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert _transitions(app, payment_id) == settled


def test_an_abandoned_authentication_is_cancelled_and_fails(app: Flask, sandbox: Any) -> None:
    payment_id = _awaiting(app)
    with app.app_context():
        assert sweep_abandoned() == 0  # not due: the customer still has time
        cancel_abandoned(payment_id)  # a stray job before the deadline changes nothing
    assert payment(app, payment_id).status == PaymentStatus.REQUIRES_ACTION
    _due_now(app, payment_id)
    with app.app_context():
        assert sweep_abandoned() == 1
    assert queued_job_ids(app) == [f"authentication-cancel-{payment_id}"]
    with app.app_context():
        cancel_abandoned(payment_id)
    cancelled = payment(app, payment_id)
    assert cancelled.status == PaymentStatus.FAILED
    assert cancelled.decline_code == ABANDONED
    assert _intent(sandbox, cancelled.provider_payment_id or "")["status"] == "canceled"
    assert sandbox.succeeded_charges(str(payment_id)) == 0


def test_a_cancel_after_the_customer_authenticated_succeeds(app: Flask, sandbox: Any) -> None:
    payment_id = _awaiting(app)
    answer_challenge(payment(app, payment_id).action_url or "")  # at the very last moment
    _due_now(app, payment_id)
    with app.app_context():
        cancel_abandoned(payment_id)
    done = payment(app, payment_id)
    assert done.status == PaymentStatus.SUCCEEDED  # the provider's answer wins over the clock
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_a_lost_cancel_answer_is_unknown_and_reconciled(app: Flask, sandbox: Any) -> None:
    payment_id = _awaiting(app)
    _due_now(app, payment_id)
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="cancel")
    with app.app_context():
        cancel_abandoned(payment_id)
    unknown = payment(app, payment_id)
    assert unknown.status == PaymentStatus.UNKNOWN
    assert scheduled_job_ids(app) == [f"reconcile-{payment_id}-0"]
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    with app.app_context():
        reconcile_payment(payment_id)  # the replay says requires_action; the intent: canceled
    failed = payment(app, payment_id)
    assert failed.status == PaymentStatus.FAILED
    assert _intent(sandbox, failed.provider_payment_id or "")["status"] == "canceled"


def test_a_cancel_refused_without_the_intent_fails_nothing(app: Flask, sandbox: Any) -> None:
    """A 4xx to the cancel that names no intent (a bad request, a wrong key) cancelled
    nothing: the payment is unknown and looked up, never failed on that answer."""
    payment_id = _awaiting(app)
    _due_now(app, payment_id)
    sandbox.add_fault("error", status=400, count=1, dialect="stripe", endpoint="cancel")
    with app.app_context():
        cancel_abandoned(payment_id)
    unknown = payment(app, payment_id)
    assert unknown.status == PaymentStatus.UNKNOWN, unknown.status
    assert scheduled_job_ids(app) == [f"reconcile-{payment_id}-0"]
    assert _intent(sandbox, unknown.provider_payment_id or "")["status"] == "requires_action"


def test_an_unknown_charge_found_waiting_for_authentication_waits(app: Flask, sandbox: Any) -> None:
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app, payment_method=THREE_DS)
    with app.app_context():
        charge_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    with app.app_context():
        reconcile_payment(payment_id)
    waiting = payment(app, payment_id)
    assert waiting.status == PaymentStatus.REQUIRES_ACTION and waiting.action_url


def test_a_tampered_requires_action_answer_goes_to_review(app: Flask, sandbox: Any) -> None:
    """A redirect to "authenticate" for another amount never reaches the customer."""
    sandbox.add_fault("tamper", field="amount", value=1, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app, payment_method=THREE_DS)
    with app.app_context():
        charge_payment(payment_id)
    held = payment(app, payment_id)
    assert held.status == PaymentStatus.NEEDS_REVIEW and held.action_url is None


def test_a_cancel_not_due_yet_never_takes_the_half_open_probe(
    app: Flask, sandbox: Any, monkeypatch: Any
) -> None:
    """The cancel used to ask the breaker before checking it was due: with the circuit
    half-open it took the one probe and dropped it, holding every other call back."""
    from extensions import redis_client
    from resilience.breaker import CircuitBreaker, Verdict
    from services.platform.provider_clients import gateway_for
    from tests.clock_support import Clock

    payment_id = _awaiting(app)  # its cancel is due SCA_TIMEOUT_S from now
    with app.app_context():
        gateway = gateway_for("stripe")
        quick = dataclasses.replace(gateway.breaker.config, open_s=0.2, open_max_s=0.2)
        clock = Clock()
        breaker = CircuitBreaker(redis_client.client, "stripe", quick, clock_ms=clock)
        monkeypatch.setattr(gateway, "breaker", breaker)
        for _ in range(int(quick.failure_threshold)):
            breaker.record(is_failure=True, duration_s=0.01)
        clock.advance(0.3)  # open period over: the next call is the probe
        cancel_abandoned(payment_id)
        assert breaker.allow().verdict == Verdict.PROBE
    assert payment(app, payment_id).status == PaymentStatus.REQUIRES_ACTION
