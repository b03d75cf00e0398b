"""Every dashboard page, as every role, over real rows of every state: each GET route of
the dashboard (the model views' lists, details of every row, exports, edit and create
forms; every custom page with each id it takes) answers 200, a redirect inside the
dashboard, or a 403 on the dashboard's own layout. Never a 500, never the shop's page."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import (
    AdminRole,
    Customer,
    DisputeStatus,
    EmailKind,
    LedgerEntry,
    Order,
    OrderStatus,
    OutboxMessage,
    OutboxStatus,
    Payment,
    PaymentStatus,
    ProcessedWebhook,
    Product,
    ReconciliationDay,
    Refund,
    RefundStatus,
    Wallet,
    WebhookState,
)
from models.types import utcnow
from services.accounts.customers import create_customer
from services.backoffice.admins import PERMISSIONS
from services.notifications.outbox import queue_email
from services.payments.wallet_orders import pay_order_from_wallet
from services.statements import reconcile
from services.wallet import ledger
from tests.admin_support import admin_as
from tests.factories import (
    make_customer,
    make_dispute,
    make_order,
    make_payment,
    make_refund,
    make_topup,
)
from tests.helpers import charged, committed_payment

ADMIN_LAYOUT = 'class="form-inline ml-auto dashboard-search"'  # the dashboard's navigation bar
SKIPPED_ENDPOINTS = {"admin.static", "admin_auth.login"}


def _scene(app: Flask) -> None:
    """Rows of every state: a card order charged at the sandbox and partly refunded,
    a wallet-paid order, payments, orders, refunds, disputes, webhooks and emails of
    every status, a top-up and a customer without anything."""
    card_paid = charged(app, committed_payment(app))
    with app.app_context():
        paid = db.session.get(Payment, card_paid)
        assert paid is not None
        for refund_status in RefundStatus:
            make_refund(paid, refund_status, amount_minor=10)
        make_dispute(paid, DisputeStatus.NEEDS_RESPONSE, is_withdrawn=True)
        for status in PaymentStatus:
            payment = make_payment(make_order(make_customer()))
            payment.status = status
            payment.first_sent_at = utcnow()
            payment.last_error = "HTTPConnectionPool: Read timed out. (read timeout=10)"
            if status in (PaymentStatus.SUCCEEDED, PaymentStatus.NEEDS_REVIEW):
                make_dispute(payment, DisputeStatus.NEEDS_REVIEW)
        for order_status in OrderStatus:
            make_order(make_customer()).status = order_status
        make_topup(make_customer())
        for state in WebhookState:
            db.session.add(
                ProcessedWebhook(
                    provider="stripe",
                    event_id=f"evt_{uuid.uuid4().hex[:12]}",
                    event_type="payment_intent.succeeded",
                    state=state,
                    payment_id=card_paid,
                    payload={"id": "evt", "type": "payment_intent.succeeded"},
                )
            )
        shopper = create_customer("wallet@example.com", "password123", ["EUR"])
        order = make_order(shopper, price_minor=300)
        wallet = ledger.wallet_of(shopper, "EUR")
        db.session.commit()
        ledger.credit(wallet, 1000, f"seed:{wallet.id}")
        pay_order_from_wallet(shopper, order.id, f"order:{order.id}")
        queue_email(EmailKind.RECEIPT, card_paid)
        db.session.commit()
        reconcile.reconcile("stripe", utcnow().date())  # a day of the Books page
        for email_status in OutboxStatus:
            someone = make_customer()
            db.session.add(
                OutboxMessage(
                    kind=EmailKind.WELCOME,
                    subject_id=someone.id,
                    recipient=someone.email,
                    status=email_status,
                    last_error="550 mailbox unavailable"
                    if email_status == OutboxStatus.FAILED
                    else None,
                )
            )
        db.session.commit()


def _ids(model: Any) -> list[int]:
    return list(db.session.scalars(select(model.id)))


ID_ARGS = {
    "payment_id": Payment,
    "order_id": Order,
    "refund_id": Refund,
    "product_id": Product,
    "outbox_id": OutboxMessage,
}


def _urls(app: Flask) -> list[str]:
    """Every GET address of the dashboard, each id-taking route once per row."""
    urls: list[str] = []
    with app.app_context(), app.test_request_context():
        views = {view.endpoint: view for view in app.extensions["admin"][0]._views}
        for rule in app.url_map.iter_rules():
            if not rule.rule.startswith("/admin") or "GET" not in (rule.methods or ()):
                continue
            if rule.endpoint in SKIPPED_ENDPOINTS or "/ajax/" in rule.rule:
                continue
            endpoint, _, method = rule.endpoint.partition(".")
            view = views.get(endpoint)
            model = getattr(view, "model", None)
            if method == "details_view" and model is not None:
                urls += [app.url_for(rule.endpoint, id=i) for i in _ids(model)]
            elif method == "export":
                urls.append(app.url_for(rule.endpoint, export_type="csv"))
            elif method == "edit_view" and model is not None:
                urls += [app.url_for(rule.endpoint, id=i) for i in _ids(model)[:2]]
            elif rule.arguments == {"provider", "day"}:  # the Books page's days
                days = db.session.execute(select(ReconciliationDay.provider, ReconciliationDay.day))
                urls += [app.url_for(rule.endpoint, provider=p, day=d.isoformat()) for p, d in days]
            elif rule.arguments:
                (arg,) = rule.arguments
                values: list[dict[str, Any]] = [{arg: i} for i in _ids(ID_ARGS[arg])]
                urls += [app.url_for(rule.endpoint, **v) for v in values]
            else:
                urls.append(app.url_for(rule.endpoint))
    return sorted(set(urls))


FORM = re.compile(r'<form\b[^>]*method="post"[^>]*>', re.IGNORECASE)
ACTION = re.compile(r'action="([^"]*)"')


def _forbidden_forms(app: Flask, url: str, page: str, role: str) -> list[str]:
    """The page's POST forms whose action needs a permission the role lacks."""
    views = {view.endpoint: view for view in app.extensions["admin"][0]._views}
    adapter = app.url_map.bind("localhost")
    found = []
    for form in FORM.findall(page):
        action = ACTION.search(form)
        path = (action.group(1) if action else url).split("?")[0].replace("&amp;", "&")
        endpoint, _ = adapter.match(path, method="POST")
        view_name, _, method = endpoint.partition(".")
        permission = getattr(views.get(view_name), "requires", {}).get(method)
        if permission and permission not in PERMISSIONS[AdminRole(role)]:
            found.append(path)
    return found


@pytest.mark.parametrize("role", [role.value for role in AdminRole])
def test_every_page_as_every_role(app: Flask, client: FlaskClient, sandbox: Any, role: str) -> None:
    _scene(app)
    urls = _urls(app)
    with app.app_context():
        counts = {m.__name__: len(_ids(m)) for m in (Payment, Order, Refund, Customer, Wallet)}
        assert min(counts.values()) >= 1, counts
        assert len(_ids(LedgerEntry)) >= 2
        assert len(_ids(ReconciliationDay)) == 1
    assert len(urls) > 60, urls
    admin = admin_as(app, client, role)
    answers: dict[str, int] = {}
    wrong: list[tuple[str, int, str]] = []
    for url in urls:
        response = admin.get(url)
        answers[url] = code = response.status_code
        page = response.get_data(as_text=True)
        if code in (301, 302, 303) and not response.location.startswith("/admin"):
            wrong.append((url, code, f"sent out of the dashboard to {response.location}"))
        elif code == 403 and not (ADMIN_LAYOUT in page and "role" in page):
            wrong.append((url, code, "a refusal off the dashboard's layout"))
        elif code not in (200, 301, 302, 303, 403, 404):
            wrong.append((url, code, "an error"))
        for action in _forbidden_forms(app, url, page, role):
            wrong.append((url, code, f"a form the role may not use: {action}"))
    assert not wrong, sorted({(u.split("?")[0], c, why) for u, c, why in wrong})
    assert sum(code == 200 for code in answers.values()) > len(urls) // 2, answers
