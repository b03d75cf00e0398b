"""No page, email or command output shows minor units as an amount: a shop with odd
amounts (a 1,234.57 product, a 7,654.31 wallet credit, a 345.67 refund) is rendered on
every customer page in English and Italian, every dashboard page that shows money, every
email, and the refund command; the integers of those amounts never appear as text."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from extensions import db
from models import OutboxMessage, Product, Wallet
from services.notifications.rendering import rendered_message
from services.refunds.issue import refund_payment
from services.wallet import ledger
from tests.admin_support import admin_login, make_admin
from tests.helpers import csrf_token_from, run_jobs
from tests.shop_support import login

PRICE, CREDIT, REFUND = 123457, 765431, 34567
FORBIDDEN = re.compile(
    rf"(?<![\d.,]){'|'.join(map(str, (PRICE, CREDIT, REFUND, PRICE - REFUND)))}(?![\d.,])"
)
LANGUAGES = [{"Accept-Language": "en"}, {"Accept-Language": "it"}]


class _Text(HTMLParser):
    """What a person reads on a page: its text, never attributes or scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        self._hidden += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self._hidden -= tag in ("script", "style")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def text_of(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return " ".join(parser.parts)


def _shown(where: str, text: str) -> None:
    around = [text[max(0, m.start() - 120) : m.end() + 120] for m in FORBIDDEN.finditer(text)]
    assert not around, f"{where} shows minor units: {around}"


@pytest.fixture
def shop(app: Flask, client: FlaskClient, sandbox: Any) -> dict[str, Any]:
    """A customer who bought the odd product by card, got part of it refunded, has an
    odd wallet credit and an open order; their emails are in the outbox."""
    with app.app_context():
        db.session.add(Product(sku="ODD", name="Odd lamp", price_minor=PRICE, currency="EUR"))
        db.session.commit()
    login(client, app, "odd@example.com")
    ids = {}
    for name in ("paid", "open"):
        page = client.get("/").get_data(as_text=True)
        client.post(
            "/cart/add", data={"csrf_token": csrf_token_from(page), "sku": "ODD", "quantity": "1"}
        )
        cart = client.get("/cart").get_data(as_text=True)
        placed = client.post("/orders", data={"csrf_token": csrf_token_from(cart)})
        ids[name] = int(placed.headers["Location"].split("/")[-2])
    checkout = client.get(f"/orders/{ids['paid']}/checkout").get_data(as_text=True)
    key = re.search(r'name="idempotency_key" value="([^"]+)"', checkout)
    assert key
    paid = client.post(
        f"/orders/{ids['paid']}/pay",
        data={
            "csrf_token": csrf_token_from(checkout),
            "idempotency_key": key.group(1),
            "payment_method": "pm_card_visa",
        },
    )
    payment_id = int(paid.headers["Location"].rsplit("/", 1)[1])
    run_jobs(app)
    import uuid

    with app.app_context():
        refund_payment(payment_id, REFUND, "a chipped base", "ops@example.com", uuid.uuid4())
        target = db.session.scalar(select(Wallet).where(Wallet.currency == "EUR"))
        assert target is not None
        ledger.credit(target, CREDIT, "odd-credit")
    run_jobs(app)
    return {"payment": payment_id, **ids}


def test_customer_pages_show_amounts_never_minor_units(
    app: Flask, client: FlaskClient, shop: dict[str, Any]
) -> None:
    pages = [
        "/",
        "/cart",
        "/orders",
        f"/orders/{shop['open']}/checkout",
        f"/orders/{shop['paid']}",
        f"/payments/{shop['payment']}",
        "/wallet",
        "/wallet/topup",
    ]
    for headers in LANGUAGES:
        for path in pages:
            response = client.get(path, headers=headers)
            assert response.status_code == 200, path
            _shown(f"{path} ({headers})", text_of(response.get_data(as_text=True)))
        form = client.get("/wallet/topup").get_data(as_text=True)
        typed = "7.654,31" if headers["Accept-Language"] == "it" else "7,654.31"
        review = client.post(
            "/wallet/topup",
            data={"csrf_token": csrf_token_from(form), "currency": "EUR", "amount": typed},
            headers=headers,
        )
        assert 'name="amount_minor" value="765431"' in review.get_data(as_text=True)
        _shown(f"top-up review ({headers})", text_of(review.get_data(as_text=True)))


def test_dashboard_pages_and_emails_show_amounts_never_minor_units(
    app: Flask, shop: dict[str, Any]
) -> None:
    admin = app.test_client()
    make_admin(app)
    assert admin_login(admin).status_code == 302
    payment_id = shop["payment"]
    with app.app_context():
        product_id = db.session.scalar(select(Product.id).where(Product.sku == "ODD"))
        outbox = db.session.scalars(select(OutboxMessage.id)).all()
    pages = [
        "/admin/",
        "/admin/admin_payments/",
        f"/admin/admin_payments/details/?id={payment_id}",
        "/admin/admin_orders/",
        "/admin/admin_wallets/",
        "/admin/admin_ledger_entries/",
        "/admin/admin_refunds/",
        f"/admin/refunds/payment/{payment_id}",
        f"/admin/payment/{payment_id}",
        "/admin/catalog/",
        f"/admin/catalog/{product_id}",
        "/admin/outbox/",
        *(f"/admin/outbox/message/{row}" for row in outbox),
    ]
    for path in pages:
        response = admin.get(path)
        assert response.status_code == 200, path
        _shown(path, text_of(response.get_data(as_text=True)))
    assert len(outbox) >= 3  # the welcome, the receipt and the refund at least
    with app.app_context():
        for row in outbox:
            message = rendered_message(row)
            assert message is not None
            _shown(f"email {row} (text)", message.text)
            _shown(f"email {row} (html)", text_of(message.html))
            _shown(f"email {row} (subject)", dict(message.headers)["Subject"])


def test_the_refund_command_says_the_amount_as_read(
    app: Flask, runner: Any, shop: dict[str, Any]
) -> None:
    done = runner.invoke(
        args=["payments", "refund", str(shop["payment"]), "--amount", "1", "--reason", "goodwill"]
    )
    assert done.exit_code == 0, done.output
    printed = json.loads(done.output)
    assert printed["amount"] == "€1.00" and printed["amount_minor"] == 100  # labelled minor
    refused = runner.invoke(
        args=["payments", "refund", str(shop["payment"]), "--amount", "5000", "--reason", "oops!"]
    )
    _shown("the refused refund", refused.output)
    assert "€887.90" in refused.output  # what is left, as read
