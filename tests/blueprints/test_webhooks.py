"""Webhooks: verified first, recorded once, applied under a lock, never backwards."""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from devtools.servers import free_port
from extensions import db
from jobs.webhooks import apply_webhook_job, backfill_webhooks_job, retry_pending_webhooks_job
from models import (
    LedgerEntry,
    Payment,
    PaymentStatus,
    PaymentTransition,
    ProcessedWebhook,
    Wallet,
)
from sandbox.events import acquirer_signature, stripe_signature
from services.charging import charge_payment
from services.webhooks import retry_pending_events
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import committed_payment, committed_topup, payment, run_maintenance_jobs

SECRET = "whsec_sandbox"


def stripe_event(
    payment_id: int | None,
    event_type: str = "payment_intent.succeeded",
    created: int | None = None,
    intent_id: str = "pi_test",
    amount: int = 1000,  # what committed_payment() creates for an order; 700 for a top-up
    currency: str = "eur",
    **extra: Any,
) -> dict:
    metadata = {"payment_id": str(payment_id)} if payment_id is not None else {}
    return {
        "id": extra.pop("event_id", f"evt_{uuid.uuid4().hex[:16]}"),
        "object": "event",
        "type": event_type,
        "created": created or int(time.time()),
        "data": {
            "object": {
                "id": intent_id,
                "object": "payment_intent",
                "status": "succeeded",
                "amount": amount,
                "currency": currency,
                "metadata": metadata,
                **extra,
            }
        },
    }


def signed_post(
    client: FlaskClient,
    payload: dict | bytes,
    *,
    secret: str = SECRET,
    timestamp: int | None = None,
    provider: str = "stripe",
) -> Any:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    t = timestamp if timestamp is not None else int(time.time())
    return client.post(
        f"/webhooks/{provider}",
        data=body,
        content_type="application/json",
        headers={"Stripe-Signature": stripe_signature(secret, body, t)},
    )


def rows(app: Flask, model: Any) -> int:
    with app.app_context():
        return int(db.session.scalar(select(func.count()).select_from(model)) or 0)


def last_state(app: Flask) -> str:
    """The state of the newest recorded event, after the queued applications ran."""
    run_maintenance_jobs(app)
    with app.app_context():
        state = db.session.scalars(
            select(ProcessedWebhook.state).order_by(ProcessedWebhook.id.desc())
        ).first()
    assert state is not None
    return state


def test_the_same_event_twice_has_one_effect(app: Flask, client: FlaskClient) -> None:
    payment_id = committed_payment(app)
    event = stripe_event(payment_id)
    assert signed_post(client, event).get_json() == {"status": "accepted"}
    assert payment(app, payment_id).status == PaymentStatus.PENDING  # recorded, not applied yet
    assert signed_post(client, event).get_json() == {"status": "duplicate"}
    assert last_state(app) == "applied"
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert payment(app, payment_id).provider_payment_id == "pi_test"
    assert rows(app, ProcessedWebhook) == 1
    assert rows(app, PaymentTransition) == 1


@pytest.mark.postgres
def test_ten_copies_at_once_credit_a_topup_once(app: Flask) -> None:
    payment_id = committed_topup(app)
    event = stripe_event(payment_id, amount=700)
    barrier = threading.Barrier(10, timeout=60)
    states: list[str] = []

    def deliver() -> None:
        with app.test_client() as own:  # its own app context, session and connection
            barrier.wait()
            states.append(signed_post(own, event).get_json()["status"])

    threads = [threading.Thread(target=deliver) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(states) == ["accepted"] + ["duplicate"] * 9
    assert last_state(app) == "applied"
    assert rows(app, ProcessedWebhook) == 1
    assert rows(app, PaymentTransition) == 1
    assert rows(app, LedgerEntry) == 1
    with app.app_context():
        assert db.session.scalar(select(Wallet.balance_minor)) == 700


def test_webhook_before_the_charge_call_returns(
    app: Flask, client: FlaskClient, sandbox: Any, webhook_receiver: Any
) -> None:
    sandbox.add_fault("commit_timeout", hold_s=0.8, count=1, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)

    def charge() -> None:
        with app.app_context():
            charge_payment(payment_id)

    charging = threading.Thread(target=charge)
    charging.start()
    deadline = time.monotonic() + 5
    while not webhook_receiver.deliveries and time.monotonic() < deadline:
        time.sleep(0.02)
    delivery = webhook_receiver.deliveries[0]  # the provider's event, while our call waits
    response = client.post(
        "/webhooks/stripe",
        data=delivery.body,
        content_type="application/json",
        headers={"Stripe-Signature": delivery.headers["Stripe-Signature"]},
    )
    assert response.get_json() == {"status": "accepted"}
    assert last_state(app) == "applied"
    assert charging.is_alive()  # our own call has not returned yet
    charging.join()
    with app.app_context():
        sources = [
            t.source.value
            for t in db.session.scalars(select(PaymentTransition).order_by(PaymentTransition.id))
        ]
    assert sources == ["webhook"]
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert sandbox.succeeded_charges(str(payment_id)) == 1


def test_an_older_event_never_moves_a_payment_backwards(app: Flask, client: FlaskClient) -> None:
    payment_id = committed_payment(app)
    now = int(time.time())
    signed_post(client, stripe_event(payment_id, created=now))
    assert last_state(app) == "applied"
    signed_post(client, stripe_event(payment_id, "payment_intent.payment_failed", created=now - 10))
    assert last_state(app) == "ignored"
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    with app.app_context():
        note = db.session.scalars(
            select(ProcessedWebhook.note).order_by(ProcessedWebhook.id.desc())
        ).first()
    assert note and "older than" in note


def test_failed_after_succeeded_needs_review_with_both_facts(
    app: Flask, client: FlaskClient
) -> None:
    payment_id = committed_payment(app)
    now = int(time.time())
    signed_post(client, stripe_event(payment_id, created=now - 5))
    signed_post(client, stripe_event(payment_id, "payment_intent.payment_failed", created=now))
    assert last_state(app) == "applied"
    assert payment(app, payment_id).status == PaymentStatus.NEEDS_REVIEW
    with app.app_context():
        last = db.session.scalars(
            select(PaymentTransition).order_by(PaymentTransition.id.desc())
        ).first()
    assert last is not None and "was succeeded" in last.reason and "reports failed" in last.reason


def test_unknown_event_types_are_recorded_without_effect(app: Flask, client: FlaskClient) -> None:
    payment_id = committed_payment(app)
    response = signed_post(client, stripe_event(payment_id, "payment_intent.created"))
    assert response.get_json() == {"status": "accepted"}
    assert last_state(app) == "ignored"
    assert rows(app, ProcessedWebhook) == 1
    assert payment(app, payment_id).status == PaymentStatus.PENDING


def test_event_for_a_payment_not_yet_known_is_kept_and_applied_later(
    app: Flask, client: FlaskClient
) -> None:
    event = stripe_event(None, intent_id="pi_later")  # no metadata: matched by provider id
    assert signed_post(client, event).get_json() == {"status": "accepted"}
    assert last_state(app) == "pending"  # kept for later
    payment_id = committed_payment(app)
    with app.app_context():
        found = db.session.get(Payment, payment_id)
        assert found is not None
        found.provider_payment_id = "pi_later"
        db.session.commit()
        assert retry_pending_webhooks_job() == 1
        assert retry_pending_webhooks_job() == 0
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED


def test_acquirer_webhooks_use_its_scheme_and_our_reference(
    app: Flask, client: FlaskClient
) -> None:
    with app.app_context():
        created = make_payment(make_order(make_customer()), provider="acquirer")
        db.session.commit()
        payment_id, key = created.id, str(created.idempotency_key)
    body = json.dumps(
        {
            "event_id": "aev_1",
            "type": "payment.declined",
            "created": int(time.time()),
            "payment": {
                "id": "acq_1",
                "reference": key,
                "status": "declined",
                "decline_reason": "do_not_honour",
            },
        }
    ).encode()
    t = int(time.time())
    response = client.post(
        "/webhooks/acquirer",
        data=body,
        content_type="application/json",
        headers={
            "X-Acquirer-Timestamp": str(t),
            "X-Acquirer-Signature": acquirer_signature("acqwh_sandbox", body, t),
        },
    )
    assert response.get_json() == {"status": "accepted"}
    assert last_state(app) == "applied"
    failed = payment(app, payment_id)
    assert failed.status == PaymentStatus.FAILED and failed.decline_code == "do_not_honour"


BAD_DELIVERIES = [
    "forged signature",
    "wrong secret",
    "replayed old timestamp",
    "future timestamp",
    "missing header",
    "malformed header",
    "truncated body",
    "random bytes",
]


def bad_delivery(case: str) -> dict[str, Any]:
    """Built when the test runs, so timestamps are relative to now."""
    body = json.dumps(stripe_event(1)).encode()
    now = int(time.time())
    good = stripe_signature(SECRET, body, now)
    cases: dict[str, tuple[bytes, dict[str, str]]] = {
        "forged signature": (body, {"Stripe-Signature": f"t={now},v1=" + "0" * 64}),
        "wrong secret": (body, {"Stripe-Signature": stripe_signature("whsec_x", body, now)}),
        "replayed old timestamp": (
            body,
            {"Stripe-Signature": stripe_signature(SECRET, body, now - 301)},
        ),
        "future timestamp": (body, {"Stripe-Signature": stripe_signature(SECRET, body, now + 301)}),
        "missing header": (body, {}),
        "malformed header": (body, {"Stripe-Signature": "garbage"}),
        "truncated body": (body[:-5], {"Stripe-Signature": good}),
        "random bytes": (b"\x00\xff\x13" * 50, {"Stripe-Signature": good}),
    }
    data, headers = cases[case]
    return {"data": data, "headers": headers}


@pytest.mark.parametrize("case", BAD_DELIVERIES)
def test_bad_deliveries_are_400_and_write_nothing(
    app: Flask, client: FlaskClient, case: str
) -> None:
    payment_id = committed_payment(app)
    response = client.post(
        "/webhooks/stripe", content_type="application/json", **bad_delivery(case)
    )
    assert response.status_code == 400, case
    assert response.get_json()["error"]["code"] == "invalid_webhook"
    assert rows(app, ProcessedWebhook) == 0
    assert payment(app, payment_id).status == PaymentStatus.PENDING


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"type": "payment_intent.succeeded", "created": 1, "data": {"object": {}}}, "id"),
        ({"id": "evt_1", "created": 1, "data": {"object": {}}}, "type"),
        ({"id": "evt_1", "type": "x", "created": "yesterday", "data": {}}, "created"),
        ({"id": "evt_1", "type": "payment_intent.succeeded", "created": 1, "data": []}, "data"),
        (
            {
                "id": "evt_1",
                "type": "payment_intent.succeeded",
                "created": 1,
                "data": {"object": {"metadata": {}}},
            },
            "data.object.id",
        ),
        ([1, 2, 3], "JSON object"),
    ],
)
def test_signed_but_malformed_events_are_400(
    app: Flask, client: FlaskClient, payload: Any, message: str
) -> None:
    body = json.dumps(payload).encode()
    response = signed_post(client, body)
    assert response.status_code == 400
    assert message in response.get_json()["error"]["message"]
    assert rows(app, ProcessedWebhook) == 0


def test_huge_body_and_unknown_provider(app: Flask, client: FlaskClient) -> None:
    huge = signed_post(client, b"{" + b" " * (70 * 1024) + b"}")
    assert huge.status_code == 413
    assert client.post("/webhooks/paypal", data=b"{}").status_code == 404
    assert rows(app, ProcessedWebhook) == 0


def test_database_down_answers_503_so_the_provider_redelivers(make_app: Any) -> None:
    broken = make_app(SQLALCHEMY_DATABASE_URI=f"postgresql+psycopg://x@127.0.0.1:{free_port()}/x")
    response = signed_post(broken.test_client(), stripe_event(1))
    assert response.status_code == 503
    assert response.get_json()["error"]["code"] == "temporarily_unavailable"


HEADER_NAMES = st.sampled_from(
    ["Stripe-Signature", "Content-Type", "X-Acquirer-Signature", "X-Acquirer-Timestamp", "X-Other"]
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.one_of(
        st.binary(max_size=3000),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(),
            lambda c: st.lists(c) | st.dictionaries(st.text(), c),
            max_leaves=20,
        ).map(lambda v: json.dumps(v).encode()),
    ),
    headers=st.dictionaries(
        HEADER_NAMES,
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=200),
    ),
    provider=st.sampled_from(["stripe", "acquirer", "other"]),
)
def test_arbitrary_requests_never_5xx_and_write_nothing(
    app: Flask, body: bytes, headers: dict[str, str], provider: str
) -> None:
    response = app.test_client().post(f"/webhooks/{provider}", data=body, headers=headers)
    assert 400 <= response.status_code < 500
    assert rows(app, ProcessedWebhook) == 0


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    payload=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=30),
        lambda c: (
            st.lists(c, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "id",
                        "type",
                        "created",
                        "data",
                        "object",
                        "metadata",
                        "payment_id",
                        "status",
                        "x",
                    ]
                ),
                c,
                max_size=6,
            )
        ),
        max_leaves=25,
    )
)
def test_correctly_signed_arbitrary_json_never_5xx(app: Flask, payload: Any) -> None:
    response = signed_post(app.test_client(), json.dumps(payload).encode())
    assert response.status_code < 500


def test_backfill_picks_up_undelivered_events_once(
    app: Flask, sandbox: Any, webhook_receiver: Any
) -> None:
    import requests

    sandbox.add_fault("webhook_drop")  # our endpoint was down: nothing arrives
    fault = sandbox.add_fault("commit_timeout", hold_s=2.5, dialect="stripe", endpoint="create")
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)  # the answer is lost too: unknown
    assert payment(app, payment_id).status == PaymentStatus.UNKNOWN
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    with app.app_context():
        assert backfill_webhooks_job("stripe") == {"applied": 1}
        assert backfill_webhooks_job("stripe") == {"duplicate": 1}
    resolved = payment(app, payment_id)
    assert resolved.status == PaymentStatus.SUCCEEDED
    assert webhook_receiver.deliveries == []
    assert rows(app, ProcessedWebhook) == 1


def test_redis_down_at_receipt_loses_no_event(app: Flask, make_app: Any) -> None:
    payment_id = committed_payment(app)
    no_redis = make_app(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    response = signed_post(no_redis.test_client(), stripe_event(payment_id))
    assert response.get_json() == {"status": "accepted"}  # recorded; its job could not be queued
    run_maintenance_jobs(app)
    assert payment(app, payment_id).status == PaymentStatus.PENDING
    with app.app_context():
        assert retry_pending_webhooks_job() == 1  # the periodic retry applies it
        record_id = db.session.scalar(select(ProcessedWebhook.id))
        assert record_id is not None
        assert apply_webhook_job(record_id) == "done"  # a late job changes nothing
    assert payment(app, payment_id).status == PaymentStatus.SUCCEEDED
    assert rows(app, PaymentTransition) == 1


def test_a_backlog_of_pending_events_is_applied_in_one_run(app: Flask, make_app: Any) -> None:
    """Events recorded while Redis was down (no jobs) are all applied by one retry run, a
    batch at a time; an event that cannot apply is set aside and holds up nothing."""
    ids = [committed_payment(app) for _ in range(25)]
    no_redis = make_app(REDIS_URL=f"redis://127.0.0.1:{free_port()}/0").test_client()
    for payment_id in ids:
        event = stripe_event(payment_id, intent_id=f"pi_{payment_id}")
        assert signed_post(no_redis, event).get_json()["status"] == "accepted"
    signed_post(no_redis, stripe_event(None, intent_id="pi_nobody"))
    # An event naming a provider payment another payment already has cannot apply (UNIQUE);
    # it is set aside (rejected, with the reason) and blocks none of the events after it.
    lonely = committed_payment(app)
    signed_post(no_redis, stripe_event(lonely, intent_id=f"pi_{ids[0]}"))
    for payment_id in ids[:3]:  # three more events (new ids) after it
        signed_post(no_redis, stripe_event(payment_id, intent_id=f"pi_{payment_id}"))
    with app.app_context():
        assert retry_pending_events(batch=10) == 29  # three batches, one run
        assert retry_pending_events(batch=10) == 0  # the one with no payment is left
        states = db.session.scalars(select(ProcessedWebhook.state)).all()
        note = db.session.scalar(
            select(ProcessedWebhook.note).where(ProcessedWebhook.state == "rejected")
        )
    assert sorted(states) == ["applied"] * 28 + ["pending", "rejected"]
    assert note is not None and "UniqueViolation" in note
    assert all(payment(app, payment_id).status == PaymentStatus.SUCCEEDED for payment_id in ids)
    assert payment(app, lonely).status == PaymentStatus.PENDING
