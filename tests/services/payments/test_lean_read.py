"""The lean read of a polled payment: one round trip, the same reply as the ORM path, and
every other case (someone else's payment, no token, a refund, an archived story) left to
the ORM path, which answers as before."""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import delete, select

from extensions import db
from models import (
    ArchivedTransition,
    Customer,
    Payment,
    PaymentStatus,
    PaymentTransition,
    TransitionSource,
)
from services.accounts.customers import hash_token, issue_api_token
from services.payments.lean_read import read_payment_by_token
from services.payments.reads import payment_json
from services.payments.state import move
from tests.factories import make_refund
from tests.helpers import api_customer, api_order, api_pay, charged
from tests.round_trips import counted_shop


def _token(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def _orm_reply(app: Flask, payment_id: int) -> dict[str, Any]:
    with app.app_context():
        return payment_json(db.session.get_one(Payment, payment_id))


def _paid(client: FlaskClient, api: dict[str, str]) -> int:
    response = api_pay(client, api, api_order(client, api)["id"])
    assert response.status_code == 201, response.get_json()
    return int(response.get_json()["id"])


def test_a_poll_takes_one_round_trip(
    app: Flask, make_app: Any, server_urls: dict[str, str]
) -> None:
    with counted_shop(make_app, server_urls["database"]) as (client, headers, database):
        payment_id = _paid(client, headers)
        client.get(f"/api/payments/{payment_id}", headers=headers)  # connects the pool
        database.reset()
        response = client.get(f"/api/payments/{payment_id}", headers=headers)
        trips = database.reset()
    assert response.status_code == 200 and response.get_json()["id"] == payment_id
    assert trips == 1


def test_the_reply_is_the_orm_paths_at_every_step(
    app: Flask, client: FlaskClient, api: dict[str, str]
) -> None:
    payment_id = _paid(client, api)

    def both() -> tuple[dict[str, Any], dict[str, Any]]:
        with app.app_context():
            assert read_payment_by_token(hash_token(_token(api)), payment_id) is not None
        polled = client.get(f"/api/payments/{payment_id}", headers=api)
        assert polled.status_code == 200
        return polled.get_json(), _orm_reply(app, payment_id)

    lean, orm = both()
    assert lean == orm and [t["to"] for t in lean["transitions"]] == ["pending"]
    charged(app, payment_id)
    with app.app_context():  # an admin's words and a review's cause stay internal
        found = db.session.get_one(Payment, payment_id)
        move(found, PaymentStatus.NEEDS_REVIEW, source=TransitionSource.ADMIN, reason="K. asked")
        found.action_url, found.decline_code = "https://bank.example/3ds", "do_not_honor"
        db.session.commit()
    lean, orm = both()
    assert lean == orm
    assert [t["to"] for t in lean["transitions"]] == ["pending", "succeeded", "needs_review"]
    assert "K. asked" not in str(lean) and lean["decline_code"] == "do_not_honor"
    assert lean["created_at"].endswith("+00:00") and lean["status"] == "needs_review"


def test_anyone_else_gets_the_orm_paths_answer(
    app: Flask, client: FlaskClient, api: dict[str, str]
) -> None:
    payment_id = _paid(client, api)
    _, stranger = api_customer(app, "stranger@example.com")
    with app.app_context():
        assert read_payment_by_token(hash_token(_token(stranger)), payment_id) is None
    answer = client.get(f"/api/payments/{payment_id}", headers=stranger)
    assert answer.status_code == 404
    assert answer.get_json()["error"]["code"] == "payment_not_found"
    assert client.get(f"/api/payments/{payment_id}").status_code == 401
    with app.app_context():  # a new token: the old one no longer reads anything
        owner = db.session.get_one(Payment, payment_id).customer_id
        issue_api_token(db.session.get_one(Customer, owner))
        assert read_payment_by_token(hash_token(_token(api)), payment_id) is None
    assert client.get(f"/api/payments/{payment_id}", headers=api).status_code == 401


def test_a_payment_with_a_refund_or_an_archived_story_is_read_in_full(
    app: Flask, client: FlaskClient, api: dict[str, str]
) -> None:
    refunded, archived = _paid(client, api), _paid(client, api)
    with app.app_context():
        make_refund(db.session.get_one(Payment, refunded))
        hot = db.session.scalars(
            select(PaymentTransition).where(PaymentTransition.payment_id == archived)
        ).all()
        for t in hot:
            db.session.add(
                ArchivedTransition(
                    id=t.id,
                    payment_id=t.payment_id,
                    from_status=t.from_status,
                    to_status=t.to_status,
                    source=t.source,
                    reason=t.reason,
                    actor=t.actor,
                    created_at=t.created_at,
                )
            )
        db.session.execute(
            delete(PaymentTransition).where(PaymentTransition.payment_id == archived)
        )
        db.session.commit()
        for payment_id in (refunded, archived):
            assert read_payment_by_token(hash_token(_token(api)), payment_id) is None
    with_refund = client.get(f"/api/payments/{refunded}", headers=api).get_json()
    assert len(with_refund["refunds"]) == 1 and with_refund == _orm_reply(app, refunded)
    story = client.get(f"/api/payments/{archived}", headers=api).get_json()
    assert [t["to"] for t in story["transitions"]] == ["pending"]
    assert story == _orm_reply(app, archived)
