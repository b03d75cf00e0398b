"""Shared test helpers: the test app config, forms, API customers, catalog, payments
committed for a test, running jobs with a real RQ worker. (One home: test modules and
conftest import from here, never from conftest.)"""

from __future__ import annotations

import dataclasses
import re
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import requests
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis
from rq import Queue
from rq.registry import ScheduledJobRegistry
from sqlalchemy import func, select
from werkzeug.serving import make_server

from commands.workers import build_worker
from devtools.servers import free_port
from extensions import db
from models import (
    Customer,
    Payment,
    PaymentStatus,
    ProcessedWebhook,
    Product,
    Wallet,
)
from services.accounts.customers import create_customer, issue_api_token
from services.movements import engine
from services.payments.kind import CHARGE
from services.platform.queues import MAINTENANCE_QUEUE, provider_queue_name
from services.refunds.kind import REFUND
from services.wallet import ledger
from settings import EXTENSION, Settings, bind_settings
from tests.factories import (
    TEST_CARDS,
    make_customer,
    make_order,
    make_payment,
    make_topup,
    make_wallet,
)
from tests.webhook_support import WEBHOOK_SECRET as WEBHOOK_SECRET
from tests.webhook_support import signed_post as signed_post
from tests.webhook_support import stripe_event as stripe_event


def seed_catalog() -> None:
    db.session.add_all(
        [
            Product(sku="MUG", name="Mug", price_minor=1400, currency="EUR"),
            Product(sku="TEE", name="T-shirt", price_minor=2500, currency="EUR"),
            Product(sku="USD-CAP", name="Cap", price_minor=900, currency="USD"),
        ]
    )
    db.session.commit()


def api_customer(app: Flask, email: str = "api@example.com") -> tuple[int, dict[str, str]]:
    """A customer with wallets and a bearer token; returns (customer id, auth headers)."""
    with app.app_context():
        customer = create_customer(email, "password123", app.config["CURRENCIES"])
        token = issue_api_token(customer)
        return customer.id, {"Authorization": f"Bearer {token}"}


def api_order(
    client: FlaskClient, headers: dict[str, str], sku: str = "MUG", quantity: int = 2
) -> dict[str, Any]:
    response = client.post(
        "/api/orders", json={"items": [{"sku": sku, "quantity": quantity}]}, headers=headers
    )
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def api_pay(
    client: FlaskClient,
    headers: dict[str, str],
    order_id: int,
    key: str | None = None,
    payment_method: str = TEST_CARDS["stripe"],
) -> Any:
    return client.post(
        f"/api/orders/{order_id}/payments",
        json={"payment_method": payment_method},
        headers={**headers, "Idempotency-Key": key or str(uuid.uuid4())},
    )


Row = TypeVar("Row")


def got(model: type[Row], row_id: object) -> Row:
    """The row of `model` with this id (in the app context's session); it must exist."""
    found = db.session.get(model, row_id)
    assert found is not None, f"no {model.__name__} {row_id}"
    return found


def charge_payment(payment_id: int) -> None:
    """The send job's work for a payment, in this process."""
    engine.send(CHARGE, payment_id)


def charged_order(app: Flask, price_minor: int, provider: str) -> int:
    """A new order's payment at `provider`, charged by the send job's work: its id."""
    with app.app_context():
        payment = make_payment(make_order(make_customer(), price_minor=price_minor), provider)
        db.session.commit()
        charge_payment(payment.id)
        return payment.id


def reconcile_payment(payment_id: int) -> None:
    """The lookup job's work for a payment, in this process."""
    engine.look_up(CHARGE, payment_id)


def send_refund(refund_id: int) -> None:
    engine.send(REFUND, refund_id)


def reconcile_refund(refund_id: int) -> None:
    engine.look_up(REFUND, refund_id)


def run_jobs(app: Flask, provider: str = "stripe") -> None:
    """Run every queued job of a provider queue in-process with a real RQ worker (burst)."""
    with app.app_context():
        build_worker(app, [provider_queue_name(provider)], simple=True).work(burst=True)


def run_notification_jobs(app: Flask) -> None:
    """Run the notifications queue (emails) with a real RQ worker (burst)."""
    with app.app_context():
        build_worker(app, [app.config["NOTIFICATIONS_QUEUE"]], simple=True).work(burst=True)


def run_maintenance_jobs(app: Flask) -> None:
    """Run the maintenance queue (webhook applications, sweeps) with a real RQ worker."""
    with app.app_context():
        build_worker(app, [MAINTENANCE_QUEUE], simple=True).work(burst=True)


def scheduled_job_ids(app: Flask, provider: str = "stripe") -> list[str]:
    with app.app_context():
        queue = Queue(
            provider_queue_name(provider), connection=Redis.from_url(app.config["REDIS_URL"])
        )
        return ScheduledJobRegistry(queue=queue).get_job_ids()


def queued_job_ids(app: Flask, provider: str = "stripe") -> list[str]:
    """The movements' jobs waiting on the provider's queue. A customer's first payment
    also queues the making of its provider customer (services/accounts/
    provider_customers.py): that one is left out here; its own tests look for it."""
    with app.app_context():
        ids = Queue(
            provider_queue_name(provider), connection=Redis.from_url(app.config["REDIS_URL"])
        ).get_job_ids()
    return [i for i in ids if not i.startswith("provider-customer-")]


def payment(app: Flask, payment_id: int) -> Payment:
    with app.app_context():
        found = db.session.scalar(select(Payment).where(Payment.id == payment_id))
        assert found is not None
        db.session.expunge(found)
        return found


@contextmanager
def serving(app: Flask, port: int | None = None) -> Iterator[str]:
    """The app behind a real threaded HTTP server (on `port`, or a free one); yields its
    base URL."""
    port = port or free_port()
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


def make_test_config(server_urls: dict[str, str], **overrides: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "TESTING": True,
        "SECRET_KEY": "test-secret",
        "SQLALCHEMY_DATABASE_URI": server_urls["database"],
        "DATABASE_OWNER_URL": server_urls.get("database_owner", ""),
        "REDIS_URL": server_urls["redis"],
        # Concurrency tests run up to 50 threads, each with its own connection.
        "SQLALCHEMY_ENGINE_OPTIONS": {"pool_size": 60},
        **FAST_PROVIDER_CONFIG,
    }
    if "sandbox" in server_urls:
        config["STRIPE_API_BASE"] = server_urls["sandbox"]
        config["BRAINTREE_API_BASE"] = server_urls["sandbox"]
        config["STRIPE_JS_URL"] = server_urls["sandbox"] + "/js/v3"
        config["BRAINTREE_JS_URL"] = server_urls["sandbox"] + "/braintree-web/client.js"
    if "mail" in server_urls:
        config["SMTP_URL"] = server_urls["mail"]
    config.update(overrides)
    return config


def override_settings(monkeypatch: Any, app: Flask, **values: Any) -> None:
    """Change a built app's settings by their environment names (as make_app does), its
    typed settings with them; the test's end restores both."""
    for name, value in values.items():
        monkeypatch.setitem(app.config, name, value)
    monkeypatch.setitem(app.extensions, EXTENSION, Settings.from_config(app.config))


def tune_breaker(app: Flask, name: str, **changes: Any) -> None:
    """Give a built app's breaker `name` other settings (before its first use there)."""
    breakers = dict(app.config["BREAKERS"])
    breakers[name] = dataclasses.replace(breakers[name], **changes)
    app.config["BREAKERS"] = breakers
    bind_settings(app)


# Provider calls in tests: short timeouts so fault scenarios finish in seconds.
FAST_PROVIDER_CONFIG = {
    "PROVIDER_CONNECT_TIMEOUT_S": 0.5,
    "PROVIDER_READ_TIMEOUT_S": 1.0,
    "PROVIDER_CALL_BUDGET_S": 3.0,
    "PROVIDER_MAX_RETRIES": 1,
    "PROVIDER_RETRY_AFTER_CAP_S": 1,
}


CSRF_RE = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_token_from(html: str) -> str:
    """The CSRF token a page rendered (tests post forms the way a browser does)."""
    match = CSRF_RE.search(html)
    assert match, "page has no CSRF token"
    return match.group(1)


def committed_payment(app: Flask, provider: str = "stripe", **fields: Any) -> int:
    """An order's payment (1000 EUR by default), committed; `fields` are set on it."""
    with app.app_context():
        created = make_payment(make_order(make_customer()), provider=provider)
        for key, value in fields.items():
            setattr(created, key, value)
        db.session.commit()
        return created.id


def committed_topup(app: Flask, amount_minor: int = 700, provider: str = "stripe") -> int:
    """A pending wallet top-up in EUR, committed."""
    with app.app_context():
        created = make_topup(make_customer(), amount_minor, provider)
        db.session.commit()
        return created.id


def rows(app: Flask, model: Any) -> int:
    with app.app_context():
        return int(db.session.scalar(select(func.count()).select_from(model)) or 0)


def charge_calls(app: Flask) -> int:
    """The call log's rows of charges (a first payment's customer is made by a call of its
    own: services/accounts/provider_customers.py)."""
    from models import ProviderCall

    with app.app_context():
        return int(
            db.session.scalar(
                select(func.count())
                .select_from(ProviderCall)
                .where(ProviderCall.operation == "charge")
            )
            or 0
        )


def all_rows(app: Flask, model: Any) -> list[Any]:
    """Every row of `model` in id order, detached (readable after the app context)."""
    with app.app_context():
        found = list(db.session.scalars(select(model).order_by(model.id)))
        for row in found:
            db.session.expunge(row)
        return found


def last_state(app: Flask) -> str:
    """The state of the newest recorded event, after the queued applications ran."""
    run_maintenance_jobs(app)
    with app.app_context():
        state = db.session.scalars(
            select(ProcessedWebhook.state).order_by(ProcessedWebhook.id.desc())
        ).first()
    assert state is not None
    return state


def charged(app: Flask, payment_id: int) -> int:
    """Charge a committed payment at the sandbox now (the charge job, in-process)."""

    with app.app_context():
        charge_payment(payment_id)
        found = db.session.get(Payment, payment_id)
        assert found is not None and found.status.value == "succeeded", found
    return payment_id


def sandbox_refunds(sandbox: Any, **filters: str) -> list[dict[str, Any]]:
    """The refunds the sandbox made (its money ledger), filtered by column."""
    import requests

    answer = requests.get(f"{sandbox.url}/_sandbox/refunds", params=filters, timeout=5)
    return list(answer.json()["data"])


def sandbox_events(sandbox: Any, kind: str) -> list[dict[str, Any]]:
    """The sandbox's events of a type, in full, as Stripe would deliver them (oldest first)."""
    auth = {"Authorization": "Bearer sk_test_sandbox"}
    listed = [e for e in sandbox.events() if e["type"] == kind]
    return [
        requests.get(f"{sandbox.url}/v1/events/{e['id']}", headers=auth, timeout=5).json()
        for e in listed
    ]


def unknown_payment(app: Flask) -> int:
    """An order's payment sent and not answered (unknown), committed."""
    from models.types import utcnow

    with app.app_context():
        created = make_payment(make_order(make_customer()))
        created.status = PaymentStatus.UNKNOWN
        created.first_sent_at = utcnow()
        db.session.commit()
        return created.id


def charged_for(app: Flask, email: str) -> int:
    """A charged order payment (1000 EUR) of a customer with this email."""
    payment_id = charged(app, committed_payment(app))
    with app.app_context():
        found = db.session.get(Payment, payment_id)
        assert found is not None
        customer = db.session.get(Customer, found.customer_id)
        assert customer is not None
        customer.email = email
        db.session.commit()
    return payment_id


def page_says(selector: str, text: str) -> Any:
    """A wait condition: the first `selector` of the page holds `text`, read in the page's
    own script in one step (the status page reloads itself: an element found before a
    reload and read after it is gone, which Selenium's text condition does not survive)."""
    script = "const e = document.querySelector(arguments[0]); return e ? e.textContent : '';"
    return lambda browser: text in (browser.execute_script(script, selector) or "")


def new_wallet(app: Flask, balance_minor: int = 0) -> int:
    with app.app_context():
        created = make_wallet(make_customer())
        db.session.commit()
        if balance_minor:
            ledger.credit(created, balance_minor, f"open:{created.id}")
        return created.id


def wallet_balance(app: Flask, payment_id: int) -> int:
    """The balance of the wallet a top-up credits."""
    with app.app_context():
        wallet_id = got(Payment, payment_id).wallet_id
        return got(Wallet, wallet_id).balance_minor
