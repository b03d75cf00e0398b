"""POST /webhooks/<provider>: verified first, nothing written before it; bad input is a
4xx, never a 5xx."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

import pytest
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devtools.servers import free_port
from extensions import db
from models import (
    PaymentStatus,
    ProcessedWebhook,
)
from sandbox.braintree.notifications import signed_form
from sandbox.braintree.xml import render
from sandbox.events import stripe_signature
from tests.factories import make_customer, make_order, make_payment
from tests.helpers import (
    committed_payment,
    last_state,
    payment,
    rows,
    signed_post,
    stripe_event,
)

SECRET = "whsec_sandbox"


def test_braintree_webhooks_use_its_scheme_and_our_reference(
    app: Flask, client: FlaskClient
) -> None:
    with app.app_context():
        created = make_payment(make_order(make_customer()), provider="braintree")
        created.status = PaymentStatus.UNKNOWN  # its sale's answer was lost
        db.session.commit()
        payment_id, key = created.id, str(created.idempotency_key)
    sale = {"id": "bt_1", "type": "sale", "status": "settled", "order_id": key}
    subject = {"transaction": {**sale, "amount": "10.00", "currency_iso_code": "EUR"}}
    xml = render(
        "notification",
        {"timestamp": datetime.now(UTC), "kind": "transaction_settled", "subject": subject},
    )
    response = client.post(
        "/webhooks/braintree",
        data=urlencode(signed_form("sandbox_public_key", "sandbox_private_key", xml)),
        content_type="application/x-www-form-urlencoded",
    )
    assert response.get_json() == {"status": "accepted"}
    assert last_state(app) == "applied"
    settled = payment(app, payment_id)
    assert settled.status == PaymentStatus.SUCCEEDED and settled.provider_payment_id == "bt_1"


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
        (
            {"type": "payment_intent.succeeded", "created": 1_800_000_000, "data": {"object": {}}},
            "id",
        ),
        ({"id": "evt_1", "created": 1_800_000_000, "data": {"object": {}}}, "type"),
        ({"id": "evt_1", "type": "x", "created": "yesterday", "data": {}}, "created"),
        (
            {
                "id": "evt_1",
                "type": "payment_intent.succeeded",
                "created": 1_800_000_000,
                "data": [],
            },
            "data",
        ),
        (
            {
                "id": "evt_1",
                "type": "payment_intent.succeeded",
                "created": 1_800_000_000,
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


HEADER_NAMES = st.sampled_from(["Stripe-Signature", "Content-Type", "X-Other"])


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
        # Braintree's shape: a form of bt_signature and bt_payload, whatever they hold
        st.fixed_dictionaries(
            {"bt_signature": st.text(max_size=80), "bt_payload": st.text(max_size=300)}
        ).map(lambda form: urlencode(form).encode()),
    ),
    headers=st.dictionaries(
        HEADER_NAMES,
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=200),
    ),
    provider=st.sampled_from(["stripe", "braintree", "other"]),
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


def test_during_a_secret_rotation_both_secrets_are_accepted(
    app: Flask, client: FlaskClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rotating STRIPE_WEBHOOK_SECRET drops no event: the one being retired is accepted
    while STRIPE_WEBHOOK_SECRET_PREVIOUS names it; any other secret is still a 400."""
    monkeypatch.setitem(app.config, "STRIPE_WEBHOOK_SECRET_PREVIOUS", "whsec_retiring")
    old, new = stripe_event(None), stripe_event(None)
    assert signed_post(client, old, secret="whsec_retiring").status_code == 200
    assert signed_post(client, new).status_code == 200
    assert signed_post(client, stripe_event(None), secret="whsec_someone_else").status_code == 400
    monkeypatch.setitem(app.config, "STRIPE_WEBHOOK_SECRET_PREVIOUS", "")
    assert signed_post(client, stripe_event(None), secret="whsec_retiring").status_code == 400
    assert rows(app, ProcessedWebhook) == 2
