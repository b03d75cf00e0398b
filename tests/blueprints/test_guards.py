"""Hostile bodies and fields answer a clear 400 before any view, and write nothing: deep
nesting (which crashed Python's JSON parser), NaN and huge numbers, NUL and lone
surrogates in JSON strings (which PostgreSQL cannot store), NUL in form and query text."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from models import Customer, LedgerEntry, Order, Payment, ProcessedWebhook, Product
from tests.helpers import csrf_token_from, rows, signed_post
from tests.shop_support import login

HOSTILE_JSON = {
    "deep arrays": "[" * 2000 + "]" * 2000,
    "deep objects": '{"a":' * 2000 + "1" + "}" * 2000,
    "NUL": '{"items": [{"sku": "MUG\\u0000", "quantity": 1}], "reference": "x\\u0000"}',
    "lone surrogate": '{"items": [{"sku": "\\ud800", "quantity": 1}], "reference": "\\udfff"}',
    "NaN": '{"amount_minor": NaN, "currency": "EUR", "items": NaN}',
    "huge number": '{"amount_minor": 1e400, "currency": "EUR", "items": [1e400]}',
    "huge integer": '{"amount_minor": ' + "9" * 5000 + ', "currency": "EUR"}',
}
ENDPOINTS = ["/api/orders", "/api/wallet/debits", "/api/wallet/topups"]


def _counts(app: Flask) -> tuple[int, ...]:
    return tuple(rows(app, model) for model in (Order, Payment, LedgerEntry, ProcessedWebhook))


@pytest.mark.parametrize("body", HOSTILE_JSON.values(), ids=HOSTILE_JSON.keys())
def test_hostile_json_is_a_400_on_every_endpoint_before_the_token(
    app: Flask, client: FlaskClient, api: dict[str, str], body: str
) -> None:
    before = _counts(app)
    for path in ENDPOINTS:
        for headers in (api, {}):  # with a token, and without: still a 400, never a 500
            response = client.post(
                path,
                data=body,
                content_type="application/json",
                headers={**headers, "Idempotency-Key": str(uuid.uuid4())},
            )
            assert response.status_code in (400, 401), (path, response.status_code)
            assert response.is_json
    signed = signed_post(client, body.encode())
    assert signed.status_code == 400 and signed.get_json()["error"]["code"] == "invalid_webhook"
    assert _counts(app) == before


def test_a_nul_in_any_form_or_query_field_is_a_400(app: Flask, client: FlaskClient) -> None:
    page = client.get("/login").get_data(as_text=True)
    for path in ("/login", "/signup"):
        for content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
            response = client.post(
                path,
                data={
                    "email": "a\x00@example.com",
                    "password": "pass\x00word1",
                    "csrf_token": csrf_token_from(page),
                },
                content_type=content_type,
            )
            assert response.status_code == 400, (path, content_type)
    assert client.get("/?q=%00").status_code == 400
    language = {"code": "it", "next": "/\x00", "csrf_token": csrf_token_from(page)}
    assert client.post("/language", data=language).status_code == 400
    assert rows(app, Customer) == 0


def test_the_dashboard_search_and_catalog_refuse_nul_and_odd_digits(
    app: Flask, admin_client: FlaskClient
) -> None:
    assert admin_client.get("/admin/search/?q=pi_%00x").status_code == 400
    page = admin_client.get("/admin/catalog/").get_data(as_text=True)
    form = {"csrf_token": csrf_token_from(page), "sku": "LAMP", "name": "Lamp", "currency": "EUR"}
    assert (
        admin_client.post(
            "/admin/catalog/new", data={**form, "sku": "LA\x00MP", "price": "5"}
        ).status_code
        == 400
    )
    odd = admin_client.post("/admin/catalog/new", data={**form, "price": "²"})
    assert odd.status_code == 422 and "Type digits only" in odd.get_data(as_text=True)
    assert rows(app, Product) == 0


def test_ordinary_text_still_passes(app: Flask, client: FlaskClient, api: dict[str, str]) -> None:
    from services.catalog.demo_data import seed_catalog

    with app.app_context():
        seed_catalog()
    answer: Any = client.post(
        "/api/wallet/debits",
        json={"amount_minor": 100, "currency": "EUR", "reference": "tab\there\nnewline é €"},
        headers={**api, "Idempotency-Key": str(uuid.uuid4())},
    )
    # Past every guard to the wallet itself, which holds nothing yet.
    assert answer.get_json()["error"]["code"] == "insufficient_funds", answer.get_json()
    login(client, app, "text@example.com")


@pytest.mark.parametrize(
    "poison",
    [
        lambda e: {**e, "id": "evt_\x00nul"},
        lambda e: {**e, "data": {"object": {**e["data"]["object"], "currency": "e\x00r"}}},
        lambda e: {**e, "data": {"object": {**e["data"]["object"], "amount": float("nan")}}},
        lambda e: {**e, "data": {"object": {**e["data"]["object"], "amount": float("inf")}}},
    ],
    ids=["NUL in the event id", "NUL in a refund's currency", "NaN amount", "Infinity amount"],
)
def test_a_webhook_that_can_never_apply_is_a_400_not_a_503(
    app: Flask, client: FlaskClient, poison: Any
) -> None:
    """The reported hole: these were answered 503 "try again", so the provider would
    redeliver them forever (and a NUL in a refund's currency crashed apply jobs)."""
    import json as std_json

    from tests.helpers import stripe_event

    event = poison(stripe_event(None, "charge.refund.updated"))
    body = std_json.dumps(event).encode()  # NaN and Infinity as Python writes them
    response = signed_post(client, body)
    assert response.status_code == 400 and response.get_json()["error"]["code"] == "invalid_webhook"
    assert rows(app, ProcessedWebhook) == 0


def test_a_chunked_body_over_the_limit_is_a_413_not_cut_and_accepted(
    app: Flask, client: FlaskClient, api: dict[str, str]
) -> None:
    """The reported hole: a chunked body past 64 KiB was cut at the limit and the cut
    body accepted (201 when the cut fell after the items)."""
    import io
    import json as std_json

    from services.catalog.demo_data import seed_catalog

    with app.app_context():
        seed_catalog()
    items = {"items": [{"sku": "MUG-001", "quantity": 1}]}
    big = std_json.dumps({**items, "pad": "x" * app.config["MAX_CONTENT_LENGTH"]}).encode()
    chunked = {**api, "Transfer-Encoding": "chunked", "Content-Type": "application/json"}

    def send(body: bytes) -> Any:
        return client.post(
            "/api/orders",
            input_stream=io.BytesIO(body),
            headers=chunked,
            environ_overrides={"wsgi.input_terminated": True, "CONTENT_LENGTH": ""},
        )

    refused = send(big)
    assert refused.status_code == 413 and refused.headers["Connection"] == "close"
    assert rows(app, Order) == 0
    small = send(std_json.dumps(items).encode())  # a chunked body within the limit: read whole
    assert small.status_code == 201, small.get_json()
    plain = client.post(
        "/api/orders", data=big, headers={**api, "Content-Type": "application/json"}
    )
    assert plain.status_code == 413 and plain.headers["Connection"] == "close"


def test_a_method_not_allowed_says_which_are(client: FlaskClient) -> None:
    for path in ("/api/orders", "/cart"):
        response = client.put(path)
        assert response.status_code == 405
        assert "POST" in response.headers["Allow"] or "GET" in response.headers["Allow"]


def test_oversized_headers_and_addresses_answer_in_json_before_the_server_would(
    client: FlaskClient,
) -> None:
    """The reported hole: gunicorn answered these with its own HTML page under /api."""
    huge = client.get("/api/orders", headers={"X-Padding": "x" * 9000})
    assert huge.status_code == 431 and huge.is_json
    assert huge.get_json()["error"]["code"] == "request_header_fields_too_large"
    many = client.get("/api/orders", headers={f"X-H{n}": "1" for n in range(90)})
    assert many.status_code == 431
    long_path = client.get("/api/orders?" + "q=" + "x" * 5000)
    assert long_path.status_code == 414 and long_path.is_json
    assert client.get("/api/wallet", headers={"X-Padding": "x" * 8000}).status_code == 401


def test_gunicorn_limits_stand_above_the_apps_own() -> None:
    from blueprints.guards import MAX_HEADER_BYTES, MAX_HEADERS, MAX_TARGET_BYTES
    from devtools.supervisor_conf import checked_in_layout, render

    command = next(
        line
        for line in render(checked_in_layout("production")).splitlines()
        if line.startswith("command=") and "gunicorn" in line
    )
    numbers = dict(re.findall(r"--limit-request-(line|field_size|fields) (\d+)", command))
    assert int(numbers["line"]) > MAX_TARGET_BYTES
    assert int(numbers["field_size"]) > MAX_HEADER_BYTES
    assert int(numbers["fields"]) > MAX_HEADERS


def test_brackets_inside_a_string_are_text_not_nesting(
    app: Flask, client: FlaskClient, api: dict[str, str]
) -> None:
    """A string with brackets after an escaped quote is text, whatever it looks like."""
    from services.catalog.demo_data import seed_catalog

    with app.app_context():
        seed_catalog()
    note = 'a \\" then ' + "[" * 60  # one escaped quote, then brackets: all text
    body = '{"amount_minor": 100, "currency": "EUR", "reference": "' + note + '"}'
    response = client.post(
        "/api/wallet/debits",
        data=body,
        content_type="application/json",
        headers={**api, "Idempotency-Key": str(uuid.uuid4())},
    )
    assert response.get_json()["error"]["code"] == "insufficient_funds", response.get_json()
