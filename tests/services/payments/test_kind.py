"""Charge and reconcile jobs against the live sandbox: exactly one charge, whatever it does."""

from __future__ import annotations

import dataclasses
import time
import uuid
from datetime import timedelta
from typing import Any

import requests
import time_machine
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from extensions import db
from models import OrderStatus, Payment, PaymentStatus, PaymentTransition
from models.types import utcnow
from sandbox.context import DEFAULT_SEARCH_LAG_S
from services.movements.janitor import sweep_sends
from services.payments.kind import CHARGE
from services.platform.provider_clients import breaker_for
from tests.helpers import (
    api_order,
    api_pay,
    charge_payment,
    committed_payment,
    got,
    payment,
    queued_job_ids,
    reconcile_payment,
    run_jobs,
    scheduled_job_ids,
)
from tests.sandbox_support import wait_for


def test_commit_then_timeout_goes_unknown_then_reconciles_to_one_charge(
    app: Flask, sandbox: Any
) -> None:
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    unknown = payment(app, payment_id)
    assert unknown.status == PaymentStatus.UNKNOWN  # never failed: it may have gone through
    assert unknown.next_reconcile_at is not None
    assert scheduled_job_ids(app) == [f"reconcile-{payment_id}-0"]
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    with app.app_context():
        reconcile_payment(payment_id)
    done = payment(app, payment_id)
    assert done.status == PaymentStatus.SUCCEEDED and done.provider_payment_id
    assert sandbox.succeeded_charges(str(payment_id)) == 1
    with app.app_context():
        order = db.session.get(Payment, payment_id)
        assert order is not None
        from models import Order

        assert got(Order, order.order_id).status == OrderStatus.PAID


def test_a_hanging_provider_does_not_slow_the_pay_request(
    app: Flask, client: FlaskClient, api: dict[str, str], sandbox: Any
) -> None:
    sandbox.add_fault("hang", seconds=30, dialect="stripe")
    order = api_order(client, api)
    import time

    started = time.monotonic()
    response = api_pay(client, api, order["id"])
    assert time.monotonic() - started < 0.5  # the call happens in a job, not here
    assert response.status_code == 201 and response.get_json()["status"] == "pending"
    assert sandbox.requests_log(endpoint="create") == []


def test_declined_payment_fails_with_its_code_and_order_stays_open(
    app: Flask, sandbox: Any
) -> None:
    payment_id = committed_payment(app, payment_method="pm_card_chargeDeclinedInsufficientFunds")
    with app.app_context():
        charge_payment(payment_id)
    failed = payment(app, payment_id)
    assert failed.status == PaymentStatus.FAILED
    assert failed.decline_code == "insufficient_funds"


def test_not_sent_stays_pending_and_is_deferred(app: Flask, sandbox: Any) -> None:
    sandbox.add_fault("error", status=429, retry_after=30, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    deferred = payment(app, payment_id)
    assert deferred.status == PaymentStatus.PENDING
    assert deferred.first_sent_at is None and deferred.send_count == 0  # provably never sent
    assert deferred.next_attempt_at is not None
    assert (deferred.next_attempt_at - utcnow()).total_seconds() >= 29
    assert [j for j in scheduled_job_ids(app) if j.startswith(f"charge-{payment_id}-at-")]


def test_charge_job_run_twice_charges_once(app: Flask, sandbox: Any) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
        charge_payment(payment_id)  # returns early: no longer pending
    assert len(sandbox.requests_log(endpoint="create")) == 1
    with app.app_context():
        assert db.session.query(PaymentTransition).count() == 1  # pending->succeeded only


def test_keyless_provider_unknown_is_looked_up_never_charged_twice(
    app: Flask, sandbox: Any
) -> None:
    sandbox.add_fault("commit_timeout", hold_s=2.5, count=1, dialect="braintree", endpoint="sale")
    payment_id = committed_payment(app, provider="braintree")
    with app.app_context():
        charge_payment(payment_id)
        assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
        time.sleep(DEFAULT_SEARCH_LAG_S + 0.5)  # Braintree's search shows a sale late
        reconcile_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    endpoints = [r["endpoint"] for r in sandbox.requests_log(dialect="braintree")]
    assert endpoints.count("sale") == 1 and "search" in endpoints  # looked up, not re-sent
    key = str(payment(app, payment_id).idempotency_key)
    assert sandbox.succeeded_charges(key) == 1


def _reconcile_while_unknown(app: Flask, payment_id: int) -> Any:
    """Run each lookup when it is due (the clock moved there), until the payment is no
    longer unknown or 20 lookups are spent; the payment then."""
    for _ in range(20):
        current = payment(app, payment_id)
        if current.status != PaymentStatus.UNKNOWN:
            break
        assert current.next_reconcile_at is not None
        with (
            time_machine.travel(current.next_reconcile_at + timedelta(seconds=1), tick=True),
            app.app_context(),
        ):
            reconcile_payment(payment_id)
    return payment(app, payment_id)


def test_reconciliation_without_answers_escalates_before_the_key_expires(
    app: Flask, sandbox: Any
) -> None:
    sandbox.add_fault("error", status=503, dialect="stripe")  # every endpoint, forever
    payment_id = committed_payment(app)
    with app.app_context():  # this test is about reconciliation, not about the breaker
        breaker_for("stripe").force("closed", actor="test", reason="isolate reconciliation")
    with app.app_context():
        charge_payment(payment_id)
    first_sent = payment(app, payment_id).first_sent_at
    assert first_sent is not None
    final = _reconcile_while_unknown(app, payment_id)
    assert final.status == PaymentStatus.NEEDS_REVIEW
    assert 4 <= final.reconcile_attempts <= app.config["RECONCILE_MAX_ATTEMPTS"]
    with app.app_context():
        last = db.session.query(PaymentTransition).order_by(PaymentTransition.id.desc()).first()
        assert last is not None and "forgets the key" in last.reason
        escalated_at = last.created_at
    assert escalated_at < first_sent + timedelta(hours=24)  # Stripe still has the key
    assert sandbox.succeeded_charges(str(payment_id)) == 0


def test_a_braintree_sale_its_search_never_shows_goes_to_review_never_sent_again(
    app: Flask, sandbox: Any
) -> None:
    """Braintree's search lags and nothing else finds a sale by our reference: not
    finding it proves nothing (DESIGN: absence needs a consistent read), so the payment
    stays unknown through its lookups and then waits for a person, never charged twice."""
    sandbox.add_fault("reset_before", count=1, dialect="braintree", endpoint="sale")
    payment_id = committed_payment(app, provider="braintree")
    with app.app_context():
        charge_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    final = _reconcile_while_unknown(app, payment_id)
    assert final.status == PaymentStatus.NEEDS_REVIEW
    with app.app_context():
        last = db.session.query(PaymentTransition).order_by(PaymentTransition.id.desc()).first()
        assert last is not None and "never proves the card was not charged" in last.reason
    endpoints = [r["endpoint"] for r in sandbox.requests_log(dialect="braintree")]
    assert endpoints.count("sale") == 1 and "search" in endpoints  # asked, never re-sent


def test_a_keyless_providers_payment_goes_to_review_after_its_last_lookup(
    app: Flask, sandbox: Any
) -> None:
    """Braintree keeps no keys, so no deadline: the lookups' count escalates (the
    reason once named a deadline it did not have, and the job failed instead)."""
    sandbox.add_fault("error", status=500, dialect="braintree")
    payment_id = committed_payment(app, provider="braintree")
    with app.app_context():
        breaker_for("braintree").force("closed", actor="test", reason="isolate reconciliation")
        charge_payment(payment_id)
    final = _reconcile_while_unknown(app, payment_id)
    assert final.status == PaymentStatus.NEEDS_REVIEW
    assert final.reconcile_attempts == app.config["RECONCILE_MAX_ATTEMPTS"]
    with app.app_context():
        last = db.session.query(PaymentTransition).order_by(PaymentTransition.id.desc()).first()
        assert last is not None and "forgets" not in last.reason
        assert last.reason.startswith(f"outcome still unknown after {final.reconcile_attempts}")


def test_redis_down_at_enqueue_loses_nothing(
    app: Flask, make_app: Any, api: dict[str, str], sandbox: Any
) -> None:
    from devtools.servers import free_port

    broken = make_app(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0", STRIPE_API_BASE=sandbox.url)
    order = api_order(broken.test_client(), api)
    response = api_pay(broken.test_client(), api, order["id"])
    assert response.status_code == 201  # the committed row is the intent
    payment_id = response.get_json()["id"]
    assert queued_job_ids(app) == []
    with app.app_context():
        assert sweep_sends(CHARGE) == 0  # too fresh: its own job may still be coming
    with time_machine.travel(utcnow() + timedelta(seconds=31), tick=True), app.app_context():
        assert sweep_sends(CHARGE) == 1
        assert sweep_sends(CHARGE) == 1  # the same deterministic job id: not queued twice
        assert queued_job_ids(app) == [f"charge-{payment_id}"]
    run_jobs(app)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_lease_keeps_a_second_job_away(app: Flask, sandbox: Any) -> None:
    payment_id = committed_payment(app)
    with app.app_context():
        db.session.execute(
            update(Payment)
            .where(Payment.id == payment_id)
            .values(lease_expires_at=utcnow() + timedelta(seconds=app.config["PAYMENT_LEASE_S"]))
        )
        db.session.commit()
        charge_payment(payment_id)  # someone holds the lease: do nothing
    assert sandbox.requests_log(endpoint="create") == []
    with (
        time_machine.travel(
            utcnow() + timedelta(seconds=app.config["PAYMENT_LEASE_S"] + 1), tick=True
        ),
        app.app_context(),
    ):
        charge_payment(payment_id)  # the holder died: the lease expired
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED


def test_unknown_key_is_independent(app: Flask) -> None:
    assert uuid.UUID(str(payment(app, committed_payment(app)).idempotency_key))


def test_a_lagging_search_never_fails_a_charged_payment_so_nobody_pays_twice(
    app: Flask, client: FlaskClient, api: dict[str, str], sandbox: Any
) -> None:
    # Stripe charges, then answers a 500 and stores it under the key: every replay
    # answers that 500 and no intent id is known. Its search index lags an hour (an
    # outage, when this path runs).
    sandbox.add_fault(
        "error", status=500, phase="stored", count=1, dialect="stripe", endpoint="create"
    )
    sandbox.add_fault("search_lag", seconds=3600, dialect="stripe", endpoint="search")
    order = api_order(client, api)
    created = api_pay(client, api, order["id"])
    assert created.status_code == 201, created.get_json()
    payment_id = created.get_json()["id"]
    run_jobs(app)
    unknown = payment(app, payment_id)
    assert unknown.status == PaymentStatus.UNKNOWN and unknown.provider_payment_id is None
    assert sandbox.succeeded_charges(str(payment_id)) == 1
    with time_machine.travel(utcnow() + timedelta(minutes=10), tick=True):
        with app.app_context():
            reconcile_payment(payment_id)
        settled = payment(app, payment_id)
        # Before: the empty search counted as "never charged" and the payment failed.
        assert settled.status == PaymentStatus.SUCCEEDED, (settled.status, settled.last_error)
        assert settled.provider_payment_id
        again = api_pay(client, api, order["id"])
        assert again.status_code == 409, again.get_json()  # the order is paid
    run_jobs(app)
    charged = sandbox.charges(order_ref=str(order["id"]), status="succeeded")["data"]
    assert len(charged) == 1
    endpoints = [r["endpoint"] for r in sandbox.requests_log(dialect="stripe")]
    assert endpoints.index("search") < endpoints.index("list")  # search hinted, list proved


def test_search_finding_nothing_never_fails_a_payment_that_was_never_charged_either(
    app: Flask, sandbox: Any
) -> None:
    # The same stored 500 before anything was charged: only the complete list of the
    # intents created around the send proves that none exists, and then it fails.
    sandbox.add_fault("error", status=500, count=1, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    with app.app_context():
        reconcile_payment(payment_id)  # at once: our request may still be running there
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    with time_machine.travel(utcnow() + timedelta(minutes=10), tick=True), app.app_context():
        got(Payment, payment_id).lease_expires_at = None
        db.session.commit()
        reconcile_payment(payment_id)
    failed = payment(app, payment_id)
    assert failed.status == PaymentStatus.FAILED
    with app.app_context():
        story = db.session.query(PaymentTransition).filter_by(payment_id=payment_id)
        reasons = [t.reason for t in story]
    assert any("among all those created" in r for r in reasons), reasons
    assert sandbox.succeeded_charges(str(payment_id)) == 0


def test_a_processing_answer_keeps_the_intent_id_for_the_next_lookup(
    app: Flask, sandbox: Any
) -> None:
    sandbox.add_fault(
        "tamper", field="status", value="processing", count=1, dialect="stripe", endpoint="create"
    )
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    waiting = payment(app, payment_id)
    assert waiting.status == PaymentStatus.UNKNOWN
    assert waiting.provider_payment_id and waiting.provider_payment_id.startswith("pi_")
    with time_machine.travel(utcnow() + timedelta(hours=25), tick=True), app.app_context():
        reconcile_payment(payment_id)  # past the key's lifetime: no replay, asked by id
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    endpoints = [r["endpoint"] for r in sandbox.requests_log(dialect="stripe")]
    assert endpoints == ["customer", "create", "retrieve"]  # never a search


def test_a_key_still_in_flight_at_stripe_keeps_the_payment_sent(app: Flask, sandbox: Any) -> None:
    """Stripe's 409 idempotency_key_in_use: a request with this key reached Stripe and is
    still running. "Not sent" would clear first_sent_at (and open the way to failover, a
    second charge elsewhere); it is unknown, and the lookup finds the one charge."""
    import threading

    from services.accounts import provider_customers
    from services.payments.kind import request_for
    from services.platform.provider_clients import provider_for

    payment_id = committed_payment(app)
    sandbox.add_fault("hang", seconds=1.0, count=1, dialect="stripe", endpoint="create")
    with app.app_context():
        row = db.session.get(Payment, payment_id)
        assert row is not None
        # As the engine sends a first payment: with its customer's Stripe Customer.
        made = provider_customers.create(row.customer_id, "stripe")
        request = dataclasses.replace(request_for(row, None), provider_customer_id=made)

    def first_send() -> None:
        with app.app_context():
            provider_for("stripe").charge(request)

    thread = threading.Thread(target=first_send)
    thread.start()
    sandbox.wait_for_request("create")  # the first request is at Stripe, held by the fault
    with app.app_context():
        charge_payment(payment_id)
    thread.join()
    unknown = payment(app, payment_id)
    assert unknown.status == PaymentStatus.UNKNOWN, unknown.status
    assert unknown.first_sent_at is not None and unknown.send_count == 1
    # Until Stripe has finished the first request (its client may have given up at its
    # read timeout first): a lookup before that meets the key in use again, and waits.
    wait_for(lambda: sandbox.succeeded_charges(str(payment_id)) == 1)
    with app.app_context():
        reconcile_payment(payment_id)
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1
