"""The published API contract (/api/openapi.json) matches the code: every /api route is in
the document, and schemathesis finds no 5xx and no response that breaks the document."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pytest
import schemathesis
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.generation.stateful import run_state_machine_as_test
from sqlalchemy import select

from blueprints.api_contract import PATHS
from blueprints.api_errors import documented_codes
from extensions import db
from models import Order, OrderStatus, Wallet
from models.types import UUID_RE
from services.wallet import ledger
from tests.helpers import api_customer, api_order, run_jobs, seed_catalog

# The budget: examples per operation (eight operations), and runs of the stateful phase
# (`make fuzz` runs both for longer: FUZZ_EXAMPLES).
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))
STATEFUL_EXAMPLES = max(EXAMPLES // 2, 10)


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
def customer(app: Flask, client: FlaskClient, sandbox: Any) -> dict[str, Any]:
    """A customer of the seeded shop with an open order (generated ids sometimes hit a
    real row) and wallets that can pay orders."""
    with app.app_context():
        seed_catalog()
    customer_id, headers = api_customer(app)
    with app.app_context():
        wallets = db.session.scalars(select(Wallet).where(Wallet.customer_id == customer_id))
        for wallet in wallets.all():
            for n in range(5):
                ledger.credit(wallet, 1_000_000, f"fuzz-funds:{wallet.id}:{n}")
    order = api_order(client, headers)
    return {"headers": headers, "order_id": order["id"]}


def api_schema(app: Flask, customer: dict[str, Any]) -> Any:
    """The served document, with the customer's token as the bearer scheme's credentials
    (schemathesis sends it, and takes it off to check for a 401)."""
    token = customer["headers"]["Authorization"].removeprefix("Bearer ")
    config = SchemathesisConfig.from_dict({"auth": {"openapi": {"bearer": {"bearer": token}}}})
    return schemathesis.openapi.from_wsgi("/api/openapi.json", app, config=config)


def as_client(case: Any) -> None:
    """The client's side of the contract: one Idempotency-Key per operation. A generated
    UUID is replaced by a new one (hypothesis draws the same UUID for two operations,
    which is rightly 422 idempotency_key_reused); a malformed one stays."""
    key = (case.headers or {}).get("Idempotency-Key")
    if isinstance(key, str) and UUID_RE.fullmatch(key.strip()):
        case.headers["Idempotency-Key"] = str(uuid.uuid4())


OPERATIONS = [(method.upper(), path) for path, ops in PATHS.items() for method in ops]


@pytest.fixture
def seen() -> dict[str, set[str]]:
    """status -> the error codes the fuzzer met"""
    return {}


def record_codes(seen: dict[str, set[str]], response: Any) -> None:
    if response.status_code >= 400:
        body = response.json()
        code = body.get("error", {}).get("code") if isinstance(body, dict) else None
        seen.setdefault(str(response.status_code), set()).add(str(code))


def assert_documented(seen: dict[str, set[str]]) -> None:
    for status, codes in seen.items():
        assert codes <= documented_codes(status), (status, codes - documented_codes(status))


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_the_running_app_keeps_its_published_contract(
    app: Flask, customer: dict[str, Any], seen: dict[str, set[str]], method: str, path: str
) -> None:
    """Every check schemathesis has, positive_data_acceptance included."""
    operation = api_schema(app, customer)[path][method]

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
        as_client(case)
        record_codes(seen, case.call_and_validate())

    call()
    assert_documented(seen)


def test_a_stateful_run_follows_the_links_to_paid_orders(
    app: Flask, customer: dict[str, Any], seen: dict[str, set[str]]
) -> None:
    """Schemathesis's stateful phase: orders made, then paid (by wallet and by card)
    and read back through the document's links, every check on every answer."""
    schema = api_schema(app, customer)

    class Shop(schema.as_state_machine()):  # type: ignore[misc]  # schemathesis builds the class at run time
        def before_call(self, case: Any) -> None:
            as_client(case)

        def after_call(self, response: Any, case: Any) -> None:
            record_codes(seen, response)

    run_state_machine_as_test(
        Shop,
        settings=settings(
            max_examples=STATEFUL_EXAMPLES,
            stateful_step_count=8,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        ),
    )
    run_jobs(app)  # the card payments' charges, at the sandbox
    with app.app_context():
        paid = db.session.scalars(select(Order.id).where(Order.status == OrderStatus.PAID)).all()
    assert len(paid) >= 2, paid
    assert_documented(seen)
