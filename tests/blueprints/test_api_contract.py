"""The published API contract (/api/openapi.json) matches the code: every /api route is in
the document, and schemathesis finds no 5xx and no response that breaks the document."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import checks

from blueprints.api_contract import PATHS
from tests.helpers import api_customer, api_order, seed_catalog

# The budget: examples per operation (nine operations, about 20 s in all).
EXAMPLES = 40


def test_the_document_describes_every_api_route_and_nothing_else(
    app: Flask, client: FlaskClient
) -> None:
    response = client.get("/api/openapi.json")
    assert response.status_code == 200
    document = response.get_json()
    assert document["openapi"] == "3.1.0"
    described = {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method in operations
    }
    routed = {
        (method, str(rule).replace("<id:", "{").replace(">", "}"))
        for rule in app.url_map.iter_rules()
        if str(rule).startswith("/api/") and str(rule) != "/api/openapi.json"
        for method in rule.methods or ()
        if method not in ("HEAD", "OPTIONS")
    }
    assert described == routed
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    key_operations = {
        path
        for path, operations in document["paths"].items()
        for operation in operations.values()
        if any(p["name"] == "Idempotency-Key" for p in operation.get("parameters", []))
    }
    assert key_operations == {
        "/api/orders/{order_id}/payments",
        "/api/orders/{order_id}/wallet-payments",
        "/api/wallet/debits",
        "/api/wallet/topups",
    }


@pytest.fixture
def customer(app: Flask, client: FlaskClient) -> dict[str, Any]:
    """A customer with an open order, so that generated ids sometimes hit real rows."""
    with app.app_context():
        seed_catalog()
    headers = api_customer(app)[1]
    order = api_order(client, headers)
    return {"headers": headers, "order_id": order["id"]}


OPERATIONS = [(method.upper(), path) for path, ops in PATHS.items() for method in ops]


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_the_running_app_keeps_its_published_contract(
    app: Flask, customer: dict[str, Any], method: str, path: str
) -> None:
    operation = schemathesis.openapi.from_wsgi("/api/openapi.json", app)[path][method]

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=True,  # the same examples every run: a failure here is reproducible
        database=None,
    )
    def call(case: Any) -> None:
        for name in ("order_id", "payment_id"):
            if case.path_parameters and case.path_parameters.get(name, 0) % 2:
                case.path_parameters[name] = customer["order_id"]  # a row that exists
        # Every check but "valid data is accepted": a well-formed order of an unknown SKU
        # or a payment of an order already paid is rightly refused (422, 409).
        case.call_and_validate(
            headers=customer["headers"], excluded_checks=[checks.positive_data_acceptance]
        )

    call()
