"""Wallet pages and API: paying orders, debits, the API's top-ups, bad input (the top-up
pages: test_wallet_topups.py)."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from extensions import db
from models import LedgerEntry, Order, OrderStatus, Payment, Wallet
from services.wallet import ledger
from tests.helpers import api_customer, csrf_token_from, got, rows, run_jobs, seed_catalog
from tests.shop_support import checkout_form, fund, place_order


def wallet_form(client: FlaskClient, order_id: int) -> dict[str, str]:
    """The checkout's wallet form; when the page offers none (the wallet is short), what
    a client that posts anyway would send."""
    page = client.get(f"/orders/{order_id}/checkout").get_data(as_text=True)
    op = re.search(r'name="operation_id" value="([^"]+)"', page)
    return {
        "csrf_token": csrf_token_from(page),
        "operation_id": op.group(1) if op else str(uuid.uuid4()),
    }


def test_pay_an_order_from_the_wallet_once(shopper: FlaskClient, app: Flask) -> None:
    fund(app, "shopper@example.com", 5000)
    order_id = place_order(shopper)
    form = wallet_form(shopper, order_id)
    for _ in range(2):  # double click
        response = shopper.post(f"/wallet/pay/{order_id}", data=form)
        assert response.status_code == 303
        assert response.headers["Location"] == f"/orders/{order_id}"  # lands on the order
    with app.app_context():
        assert got(Order, order_id).status == OrderStatus.PAID
        assert (
            db.session.scalar(select(Wallet.balance_minor).where(Wallet.currency == "EUR"))
            == 5000 - 2800
        )
    assert rows(app, LedgerEntry) == 2  # the funding and one debit
    page = shopper.get("/wallet").get_data(as_text=True)
    assert f"Order #{order_id}" in page and "€22.00" in page
    italian = shopper.get("/wallet", headers={"Accept-Language": "it"}).get_data(as_text=True)
    assert f"Ordine n. {order_id}" in italian and "order " not in italian


def test_the_wallet_is_offered_only_when_it_covers_the_order(
    shopper: FlaskClient, app: Flask
) -> None:
    fund(app, "shopper@example.com", 1600)
    order_id = place_order(shopper)  # €28.00
    page = shopper.get(f"/orders/{order_id}/checkout").get_data(as_text=True)
    assert 'id="pay-wallet"' not in page and "not enough for this order" in page
    fund(app, "shopper@example.com", 1200)
    page = shopper.get(f"/orders/{order_id}/checkout").get_data(as_text=True)
    assert 'id="pay-wallet"' in page


def test_insufficient_funds_leave_the_order_open(shopper: FlaskClient, app: Flask) -> None:
    order_id = place_order(shopper)
    response = shopper.post(f"/wallet/pay/{order_id}", data=wallet_form(shopper, order_id))
    assert "Your wallet holds €0.00: not enough for this." in shopper.get(
        response.headers["Location"]
    ).get_data(as_text=True)
    italian = shopper.post(
        f"/wallet/pay/{order_id}",
        data=wallet_form(shopper, order_id),
        headers={"Accept-Language": "it"},
    )
    assert "Il tuo borsellino contiene 0,00\xa0€: non basta." in shopper.get(
        italian.headers["Location"], headers={"Accept-Language": "it"}
    ).get_data(as_text=True)
    with app.app_context():
        assert got(Order, order_id).status == OrderStatus.OPEN
    assert rows(app, LedgerEntry) == 0


def test_wallet_cannot_pay_an_order_a_card_payment_is_paying(
    shopper: FlaskClient, app: Flask
) -> None:
    fund(app, "shopper@example.com", 5000)
    order_id = place_order(shopper)
    form = wallet_form(shopper, order_id)
    shopper.post(f"/orders/{order_id}/pay", data=checkout_form(shopper, order_id))
    response = shopper.post(f"/wallet/pay/{order_id}", data=form)
    assert response.status_code == 303
    assert rows(app, LedgerEntry) == 1  # only the funding


def test_wallet_pay_with_a_bad_operation_id_writes_nothing(
    shopper: FlaskClient, app: Flask
) -> None:
    fund(app, "shopper@example.com", 5000)
    order_id = place_order(shopper)
    form = {**wallet_form(shopper, order_id), "operation_id": "x' OR 1=1"}
    assert shopper.post(f"/wallet/pay/{order_id}", data=form).status_code == 303
    assert rows(app, LedgerEntry) == 1


def test_history_is_paginated(shopper: FlaskClient, app: Flask) -> None:
    for _ in range(25):
        fund(app, "shopper@example.com", 1)
    first = shopper.get("/wallet").get_data(as_text=True)
    assert "Page 1 of 2" in first and first.count("<tr>") == 21  # header + 20
    second = shopper.get("/wallet?page=2").get_data(as_text=True)
    assert "Page 2 of 2" in second and second.count("<tr>") == 6


@pytest.fixture
def api_account(app: Flask) -> tuple[int, dict[str, str]]:
    return api_customer(app)


def test_api_wallet_debits(
    client: FlaskClient, app: Flask, api_account: tuple[int, dict[str, str]]
) -> None:
    customer_id, headers = api_account
    with app.app_context():
        target = db.session.scalar(
            select(Wallet).where(Wallet.customer_id == customer_id, Wallet.currency == "EUR")
        )
        assert target is not None
        ledger.credit(target, 100, "api-fund")
    key = str(uuid.uuid4())
    body = {"amount_minor": 60, "currency": "EUR", "reference": "coffee"}
    first = client.post(
        "/api/wallet/debits", json=body, headers={**headers, "Idempotency-Key": key}
    )
    assert first.status_code == 201 and first.get_json()["balance_after_minor"] == 40
    again = client.post(
        "/api/wallet/debits", json=body, headers={**headers, "Idempotency-Key": key}
    )
    assert again.status_code == 200 and again.get_json() == first.get_json()
    broke = client.post(
        "/api/wallet/debits", json=body, headers={**headers, "Idempotency-Key": str(uuid.uuid4())}
    )
    assert broke.status_code == 409
    assert broke.get_json()["error"]["code"] == "insufficient_funds"
    balances = client.get("/api/wallet", headers=headers).get_json()["wallets"]
    assert {w["currency"]: w["balance_minor"] for w in balances}["EUR"] == 40


@pytest.mark.parametrize("debit_first", [True, False], ids=["debit then order", "order then debit"])
def test_one_key_on_two_endpoints_is_refused_never_replayed(
    app: Flask, client: FlaskClient, debit_first: bool
) -> None:
    """The reported hole: a debit with key K, then the order's wallet payment with K
    answered 200 with the debit's movement while the order stayed open (and the reverse)."""
    from tests.helpers import api_customer, seed_catalog

    with app.app_context():
        seed_catalog()
    _, headers = api_customer(app, "two-keys@example.com")
    fund(app, "two-keys@example.com", 10000)
    order = client.post(
        "/api/orders", json={"items": [{"sku": "MUG", "quantity": 2}]}, headers=headers
    ).get_json()
    keyed = {**headers, "Idempotency-Key": str(uuid.uuid4())}
    debit = {"amount_minor": order["total_minor"], "currency": "EUR", "reference": "coffee"}

    def pay_debit() -> Any:
        return client.post("/api/wallet/debits", json=debit, headers=keyed)

    def pay_order() -> Any:
        return client.post(f"/api/orders/{order['id']}/wallet-payments", headers=keyed)

    first, second = (pay_debit, pay_order) if debit_first else (pay_order, pay_debit)
    assert first().status_code == 201
    refused = second()
    assert refused.status_code == 422, refused.get_json()
    assert refused.get_json()["error"]["code"] == "operation_id_reused"
    status = client.get(f"/api/orders/{order['id']}", headers=headers).get_json()["status"]
    assert status == ("open" if debit_first else "paid")
    assert rows(app, LedgerEntry) == 2  # the funding and the one movement


@pytest.mark.parametrize(
    ("body", "key", "status", "code"),
    [
        ({"amount_minor": 10, "currency": "EUR"}, None, 400, "idempotency_key_missing"),
        ({"amount_minor": 10, "currency": "EUR"}, "nope", 400, "idempotency_key_invalid"),
        ({"amount_minor": -10, "currency": "EUR"}, "k", 422, "invalid_wallet_operation"),
        ({"amount_minor": "10", "currency": "EUR"}, "k", 422, "invalid_wallet_operation"),
        ({"amount_minor": 10}, "k", 422, "invalid_currency"),
        ({"amount_minor": 10, "currency": "JPY"}, "k", 404, "wallet_not_found"),
        ({"amount_minor": 10, "currency": "EUR", "reference": 5}, "k", 422, "invalid_reference"),
        ([1], "k", 400, "invalid_body"),
    ],
)
def test_api_bad_debits_write_nothing(
    client: FlaskClient,
    app: Flask,
    api_account: tuple[int, dict[str, str]],
    body: Any,
    key: str | None,
    status: int,
    code: str,
) -> None:
    headers = dict(api_account[1])
    if key is not None:
        headers["Idempotency-Key"] = str(uuid.uuid4()) if key == "k" else key
    response = client.post("/api/wallet/debits", json=body, headers=headers)
    assert response.status_code == status
    assert response.get_json()["error"]["code"] == code
    assert rows(app, LedgerEntry) == 0


def test_api_topup_and_wallet_payment(
    client: FlaskClient, app: Flask, api_account: tuple[int, dict[str, str]], sandbox: Any
) -> None:
    _, headers = api_account
    with app.app_context():
        seed_catalog()
    key = str(uuid.uuid4())
    body = {"amount_minor": 5000, "currency": "EUR", "payment_method": "pm_card_visa"}
    first = client.post(
        "/api/wallet/topups", json=body, headers={**headers, "Idempotency-Key": key}
    )
    again = client.post(
        "/api/wallet/topups", json=body, headers={**headers, "Idempotency-Key": key}
    )
    assert first.status_code == 201 and again.status_code == 200
    topup = first.get_json()
    assert again.get_json()["id"] == topup["id"] and topup["purpose"] == "wallet_topup"
    other = client.post(
        "/api/wallet/topups",
        json={**body, "amount_minor": 4000},
        headers={**headers, "Idempotency-Key": key},
    )
    assert other.status_code == 422
    assert other.get_json()["error"]["code"] == "idempotency_key_reused"
    run_jobs(app)
    paid = client.get(f"/api/payments/{topup['id']}", headers=headers).get_json()
    assert paid["status"] == "succeeded"
    assert sandbox.succeeded_charges(str(topup["id"])) == 1

    order = client.post(
        "/api/orders", json={"items": [{"sku": "MUG", "quantity": 1}]}, headers=headers
    ).get_json()
    op = {**headers, "Idempotency-Key": str(uuid.uuid4())}
    spent = client.post(f"/api/orders/{order['id']}/wallet-payments", headers=op)
    replay = client.post(f"/api/orders/{order['id']}/wallet-payments", headers=op)
    assert spent.status_code == 201 and replay.status_code == 200
    assert spent.get_json()["balance_after_minor"] == 5000 - order["total_minor"]
    assert replay.get_json() == spent.get_json()
    fresh = client.post(
        f"/api/orders/{order['id']}/wallet-payments",
        headers={**headers, "Idempotency-Key": str(uuid.uuid4())},
    )
    assert fresh.status_code == 409 and fresh.get_json()["error"]["code"] == "order_not_open"
    assert client.get(f"/api/orders/{order['id']}", headers=headers).get_json()["status"] == "paid"
    assert rows(app, LedgerEntry) == 2  # the top-up credit and one debit


@pytest.mark.parametrize(
    ("body", "key", "status", "code"),
    [
        ({"amount_minor": 10, "currency": "EUR"}, None, 400, "idempotency_key_missing"),
        ({"amount_minor": 0, "currency": "EUR"}, "k", 422, "invalid_amount"),
        ({"amount_minor": 10.5, "currency": "EUR"}, "k", 422, "invalid_amount"),
        ({"amount_minor": 10**12, "currency": "EUR"}, "k", 422, "invalid_amount"),
        ({"amount_minor": 10}, "k", 422, "invalid_currency"),
        ({"amount_minor": 10, "currency": "JPY"}, "k", 404, "wallet_not_found"),
        ("nope", "k", 400, "invalid_body"),
    ],
)
def test_api_bad_topups_write_nothing(
    client: FlaskClient,
    app: Flask,
    api_account: tuple[int, dict[str, str]],
    body: Any,
    key: str | None,
    status: int,
    code: str,
) -> None:
    headers = dict(api_account[1])
    if key is not None:
        headers["Idempotency-Key"] = str(uuid.uuid4())
    if isinstance(body, dict):
        body = {**body, "payment_method": "pm_card_visa"}
    response = client.post("/api/wallet/topups", json=body, headers=headers)
    assert response.status_code == status
    assert response.get_json()["error"]["code"] == code
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Payment)) == 0
