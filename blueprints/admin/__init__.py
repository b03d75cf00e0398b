"""The admin dashboard (Flask-Admin 2): every page and action behind the admin login.
Each view lives in its own module and imports only the leaf `base.py`; this module
puts them together."""

from __future__ import annotations

from flask import Flask, Response, request
from flask_admin import Admin
from flask_admin.theme import Bootstrap4Theme

from blueprints.admin.auth import bp
from blueprints.admin.base import (
    breaker_event,
    console_time,
    customer_email,
    named_payment,
    record_links,
)
from blueprints.admin.books import BooksView
from blueprints.admin.catalog import CatalogView
from blueprints.admin.disputes import DisputeView
from blueprints.admin.outbox import OutboxView
from blueprints.admin.overview import OverviewView, QueuesView, UnknownPaymentsView
from blueprints.admin.records import (
    CustomerView,
    LedgerView,
    OrderView,
    PaymentView,
    WalletView,
    WebhookView,
)
from blueprints.admin.refund_requests import RefundRequestsView
from blueprints.admin.refunds import RefundPagesView, RefundView
from blueprints.admin.search import SearchView
from blueprints.admin.story import PaymentStoryView
from blueprints.admin.users import UsersView
from blueprints.headers import csp_nonce
from extensions import db
from models import (
    Customer,
    Dispute,
    LedgerEntry,
    Order,
    OutboxMessage,
    Payment,
    ProcessedWebhook,
    Refund,
    Wallet,
)
from services.backoffice import admins
from services.backoffice.names import answer_in_words


def register(app: Flask) -> None:
    app.register_blueprint(bp)
    app.after_request(_with_language)
    admin = Admin(
        app,
        name="Payments admin",
        url="/admin",
        index_view=OverviewView(name="Overview", url="/admin"),
        theme=Bootstrap4Theme(swatch="default", fluid=True),
        csp_nonce_generator=csp_nonce,
    )
    admin.add_view(UnknownPaymentsView(name="Unknown payments", endpoint="unknown"))
    admin.add_view(QueuesView(name="Queues", endpoint="queues"))
    admin.add_view(BooksView(name="Books", endpoint="books"))
    admin.add_view(CatalogView(name="Catalog", endpoint="catalog"))
    admin.add_view(RefundPagesView(name="Refund", endpoint="refunds"))
    admin.add_view(RefundRequestsView(name="Refund requests", endpoint="refund_requests"))
    admin.add_view(PaymentStoryView(name="Payment", endpoint="story", url="/admin/payment"))
    admin.add_view(SearchView(name="Search", endpoint="search"))
    admin.add_view(UsersView(name="Users", endpoint="users"))
    for model, view in (
        (Payment, PaymentView),
        (Order, OrderView),
        (ProcessedWebhook, WebhookView),
        (Wallet, WalletView),
        (LedgerEntry, LedgerView),
        (Customer, CustomerView),
        (Refund, RefundView),
        (Dispute, DisputeView),
    ):
        admin.add_view(view(model, db, category="Records", endpoint=f"admin_{model.__tablename__}"))
    admin.add_view(OutboxView(OutboxMessage, db, name="Outbox", endpoint="outbox"))
    # `can('refund')`: a page renders the forms and buttons of the admin's role only
    app.jinja_env.globals["can"] = lambda permission: admins.can(admins.current_admin(), permission)
    app.jinja_env.filters["record_links"] = record_links
    app.jinja_env.filters["named_payment"] = named_payment
    app.jinja_env.filters["console_time"] = console_time
    app.jinja_env.filters["customer_email"] = customer_email
    app.jinja_env.filters["breaker_event"] = breaker_event
    app.jinja_env.filters["answer_in_words"] = answer_in_words


def _with_language(response: Response) -> Response:
    """Flask-Admin's base template writes a bare <html>: the dashboard's pages say their
    language (English), as screen readers need and axe-core checks."""
    is_page = response.mimetype == "text/html" and not response.is_streamed
    if is_page and request.path.startswith("/admin"):
        response.set_data(response.get_data().replace(b"<html>", b'<html lang="en">', 1))
    return response
