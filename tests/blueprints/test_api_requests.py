"""What the API reads as its contract says: ASCII row ids, JSON bodies only (415
otherwise), integral numbers as integers, a precise code for text and numbers it cannot
hold, unknown fields refused, and Location on what it creates."""

from __future__ import annotations

import uuid

import pytest
from flask import Flask
from flask.testing import FlaskClient

from models import Order, Payment
from tests.helpers import api_order, rows


@pytest.mark.parametrize("raw", ["%D9%A2", "%EF%BC%92", "%E0%A5%A8", "2%C2%B2"])
def test_row_ids_are_ascii_digits_only(client: FlaskClient, api: dict[str, str], raw: str) -> None:
    """Arabic-Indic 2, full-width 2, Devanagari 2, a superscript: no row of ours."""
    order = api_order(client, api)
    assert order["id"] == 1 and client.get("/api/orders/1", headers=api).status_code == 200
    response = client.get(f"/api/orders/{raw}", headers=api)
    assert response.status_code == 404 and response.get_json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/vnd.api+json",
        "application/json; charset=utf-16",
        "application/x-www-form-urlencoded",
    ],
)
def test_bodies_other_than_json_are_a_415_and_write_nothing(
    app: Flask, client: FlaskClient, api: dict[str, str], content_type: str
) -> None:
    body = b'{"items": [{"sku": "MUG", "quantity": 1}]}'
    response = client.post("/api/orders", data=body, content_type=content_type, headers=api)
    assert response.status_code == 415
    assert response.get_json()["error"]["code"] == "unsupported_media_type"
    assert rows(app, Order) == 0
    charset = client.post(
        "/api/orders", data=body, content_type="application/json; charset=UTF-8", headers=api
    )
    assert charset.status_code == 201


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ('{"items": [{"sku": "MUG\\u0002", "quantity": 1}]}', "invalid_text"),
        ('{"items": [{"sku": "MUG", "quantity": 1e400}]}', "number_out_of_range"),
        ('{"items": [{"sku": "MUG", "quantity": ' + "1" * 40 + "}]}", "number_out_of_range"),
        ('{"items": [', "invalid_json"),
        ("[]", "invalid_body"),
    ],
)
def test_each_kind_of_unreadable_body_says_what_it_is(
    app: Flask, client: FlaskClient, api: dict[str, str], body: str, code: str
) -> None:
    response = client.post("/api/orders", data=body, content_type="application/json", headers=api)
    assert response.status_code == 400 and response.get_json()["error"]["code"] == code
    assert rows(app, Order) == 0


def test_integral_numbers_are_integers_as_json_schema_counts_them(
    client: FlaskClient, api: dict[str, str]
) -> None:
    body = '{"items": [{"sku": "MUG", "quantity": 2.0}, {"sku": "TEE", "quantity": 1e0}]}'
    response = client.post("/api/orders", data=body, content_type="application/json", headers=api)
    assert response.status_code == 201 and response.get_json()["total_minor"] == 2 * 1400 + 2500
    half = client.post(
        "/api/orders",
        data='{"items": [{"sku": "MUG", "quantity": 2.5}]}',
        content_type="application/json",
        headers=api,
    )
    assert half.status_code == 422 and half.get_json()["error"]["code"] == "invalid_quantity"


def test_what_is_created_says_where_it_lives(
    app: Flask, client: FlaskClient, api: dict[str, str]
) -> None:
    made = client.post("/api/orders", json={"items": [{"sku": "MUG", "quantity": 1}]}, headers=api)
    assert made.headers["Location"] == f"/api/orders/{made.get_json()['id']}"
    key = {"Idempotency-Key": str(uuid.uuid4())}
    paid = client.post(
        f"/api/orders/{made.get_json()['id']}/payments",
        json={"payment_method": "pm_card_visa"},
        headers={**api, **key},
    )
    assert paid.status_code == 201, paid.get_json()
    assert paid.headers["Location"] == f"/api/payments/{paid.get_json()['id']}"
    assert (
        client.get(paid.headers["Location"], headers=api).get_json()["id"] == paid.get_json()["id"]
    )
    again = client.post(
        f"/api/orders/{made.get_json()['id']}/payments",
        json={"payment_method": "pm_card_visa"},
        headers={**api, **key},
    )
    assert again.status_code == 200 and "Location" not in again.headers
    assert rows(app, Payment) == 1


def test_a_payment_with_an_unknown_field_is_refused_not_paid(
    app: Flask, client: FlaskClient, api: dict[str, str]
) -> None:
    order = api_order(client, api)
    response = client.post(
        f"/api/orders/{order['id']}/payments",
        json={"payment_method": "pm_card_visa", "amount_minor": 1},
        headers={**api, "Idempotency-Key": str(uuid.uuid4())},
    )
    assert response.status_code == 422 and response.get_json()["error"]["code"] == "unknown_field"
    assert rows(app, Payment) == 0
