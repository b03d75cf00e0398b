"""The lean intake: few round trips, the same rows as the ORM path, the same checks of
who is asking, and an order still paid once however the two routes race."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import Customer, LedgerEntry, Payment, PaymentTransition
from services.accounts.customers import end_sessions, issue_api_token
from services.payments.checkout import start_order_payment
from tests.helpers import (
    api_customer,
    api_order,
    api_pay,
    csrf_token_from,
    queued_job_ids,
    rows,
    seed_catalog,
)
from tests.round_trips import counted
from tests.shop_support import fund, login, place_order

CARD = "pm_card_visa"


def _pay_form(client: FlaskClient, order_id: int) -> Any:
    page = client.get(f"/orders/{order_id}/checkout").get_data(as_text=True)
    return client.post(
        f"/orders/{order_id}/pay",
        data={
            "csrf_token": csrf_token_from(page),
            "idempotency_key": str(uuid.uuid4()),
            "payment_method": CARD,
        },
    )


def test_a_payment_takes_two_round_trips(
    app: Flask, make_app: Any, server_urls: dict[str, str]
) -> None:
    with (
        counted(server_urls["database"]) as (db_url, database),
        counted(server_urls["redis"]) as (redis_url, redis),
    ):
        lean = make_app(SQLALCHEMY_DATABASE_URI=db_url, REDIS_URL=redis_url)
        with lean.app_context():
            seed_catalog()
        _, headers = api_customer(lean)
        client = lean.test_client()
        api_pay(client, headers, api_order(client, headers)["id"])  # connects the pools
        order = api_order(client, headers)
        database.reset(), redis.reset()
        response = api_pay(client, headers, order["id"])
        api_trips = (database.reset(), redis.reset())

        browser = lean.test_client()
        login(browser, lean)
        order_id = place_order(browser)
        page = browser.get(f"/orders/{order_id}/checkout").get_data(as_text=True)
        form = {"csrf_token": csrf_token_from(page), "payment_method": CARD}
        database.reset(), redis.reset()
        paid = browser.post(
            f"/orders/{order_id}/pay", data={**form, "idempotency_key": str(uuid.uuid4())}
        )
        form_trips = (database.reset(), redis.reset())

    assert response.status_code == 201, response.get_json()
    assert paid.status_code == 303 and "/payments/" in paid.headers["Location"]
    # The one statement; one pipelined enqueue.
    assert api_trips == (1, 1)
    assert form_trips == (1, 1)
    assert len(queued_job_ids(app)) == 3


def test_the_lean_path_writes_what_the_orm_path_writes(
    app: Flask, client: FlaskClient, api: dict[str, str]
) -> None:
    lean = api_pay(client, api, api_order(client, api)["id"]).get_json()
    slow_order = api_order(client, api)["id"]
    with app.app_context():
        customer_id = lean_payment(lean["id"]).customer_id
        customer = db.session.get_one(Customer, customer_id)
        # The address the blueprint hands on (the test client's).
        _, is_new = start_order_payment(customer, slow_order, uuid.uuid4(), CARD, "127.0.0.1")
        assert is_new
        made = {
            p.order_id: (_columns(p), [_columns(t) for t in _transitions(p.id)])
            for p in db.session.scalars(select(Payment).where(Payment.customer_id == customer_id))
        }
    assert made[lean["order_id"]] == made[slow_order]
    # The API's answer is what a later GET shows.
    assert client.get(f"/api/payments/{lean['id']}", headers=api).get_json() == lean


def test_a_revoked_token_or_an_ended_session_pays_nothing(app: Flask) -> None:
    with app.app_context():
        seed_catalog()
    customer_id, headers = api_customer(app)
    client = app.test_client()
    order = api_order(client, headers)
    browser = app.test_client()
    login(browser, app, "shopper@example.com")
    form_order = place_order(browser)
    page = browser.get(f"/orders/{form_order}/checkout").get_data(as_text=True)
    with app.app_context():
        issue_api_token(db.session.get_one(Customer, customer_id))
        end_sessions(
            db.session.scalars(select(Customer).where(Customer.email.like("shopper%"))).one()
        )

    refused = api_pay(client, headers, order["id"])
    form = {"csrf_token": csrf_token_from(page), "payment_method": CARD}
    signed_out = browser.post(
        f"/orders/{form_order}/pay", data={**form, "idempotency_key": str(uuid.uuid4())}
    )

    assert refused.status_code == 401
    assert signed_out.status_code == 302 and "/login" in signed_out.headers["Location"]
    assert rows(app, Payment) == 0 and rows(app, PaymentTransition) == 0


def test_a_connection_the_database_dropped_falls_back_to_the_orm_path(
    app: Flask, client: FlaskClient, api: dict[str, str], drop_connections: Callable[[], int]
) -> None:
    api_pay(client, api, api_order(client, api)["id"])  # the lean pool has a connection
    order_id = api_order(client, api)["id"]  # before the drop: its token check is the ORM's
    with app.app_context():
        assert drop_connections()

    response = api_pay(client, api, order_id)  # the lean statement meets a dead connection

    assert response.status_code == 201, response.get_json()
    assert rows(app, Payment) == 2 and rows(app, PaymentTransition) == 2


def test_card_and_wallet_racing_for_one_order_pay_it_once(app: Flask) -> None:
    with app.app_context():
        seed_catalog()
    _, headers = api_customer(app, "racer@example.com")
    fund(app, "racer@example.com", 100_000)
    order = api_order(app.test_client(), headers)
    barrier = threading.Barrier(12, timeout=60)
    codes: list[tuple[str, int]] = []

    def pay(route: str) -> None:
        with app.test_client() as own:
            barrier.wait()
            if route == "card":
                response = api_pay(own, headers, order["id"])
            else:
                response = own.post(
                    f"/api/orders/{order['id']}/wallet-payments",
                    headers={**headers, "Idempotency-Key": str(uuid.uuid4())},
                )
            codes.append((route, response.status_code))

    threads = [threading.Thread(target=pay, args=(r,)) for r in ["card", "wallet"] * 6]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    created = [route for route, code in codes if code == 201]
    assert len(created) == 1, codes
    assert all(code in (201, 409) for _, code in codes), codes
    with app.app_context():
        card_payments = rows(app, Payment)
        debits = db.session.scalars(select(LedgerEntry).where(LedgerEntry.amount_minor < 0)).all()
    assert card_payments + len(debits) == 1


def lean_payment(payment_id: int) -> Payment:
    found = db.session.get(Payment, payment_id)
    assert found is not None
    return found


def _columns(row: Any) -> dict[str, Any]:
    """A row's columns, less those that differ by nature (ids, keys, times)."""
    skip = {"id", "payment_id", "order_id", "idempotency_key", "created_at", "updated_at"}
    return {c.key: getattr(row, c.key) for c in row.__table__.columns if c.key not in skip}


def _transitions(payment_id: int) -> list[PaymentTransition]:
    return list(
        db.session.scalars(
            select(PaymentTransition).where(PaymentTransition.payment_id == payment_id)
        )
    )
