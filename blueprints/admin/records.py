"""Records: the read-only lists of payments, orders, webhooks, wallets, the ledger and
customers."""

from __future__ import annotations

from typing import Any

from flask import url_for
from markupsafe import Markup

from blueprints.admin.base import (
    CUSTOMER,
    ORDER,
    PAYMENT,
    WALLET,
    ReadOnlyView,
    money_column,
    named_payment,
    record_links,
)
from models import Customer
from services.backoffice import records as backoffice_records
from services.platform import retention
from services.platform.locales import money_text
from services.wallet.reads import wallet_currency


class PaymentView(ReadOnlyView):
    column_list = (
        "id",
        "status",
        "purpose",
        "provider",
        "amount_minor",
        "order_id",
        "customer_id",
        "idempotency_key",
        "provider_payment_id",
        "reconcile_attempts",
        "created_at",
        "updated_at",
    )
    # Date range, status, provider, amount (minor units) and the customer's email.
    column_filters = (
        "status",
        "provider",
        "purpose",
        "created_at",
        "amount_minor",
        "customer.email",
    )
    column_searchable_list = ("provider_payment_id",)
    column_default_sort = ("id", True)
    column_formatters = {
        "amount_minor": money_column,
        "id": PAYMENT,
        "order_id": ORDER,
        "customer_id": CUSTOMER,
    }
    column_details_list = (
        *column_list,
        "refunds",
        "currency",
        "decline_code",
        "first_sent_at",
        "last_sent_at",
        "send_count",
        "next_reconcile_at",
        "last_error",
        "transitions",
    )
    column_formatters_detail = {
        "amount_minor": money_column,
        "order_id": ORDER,
        "customer_id": CUSTOMER,
        "refunds": lambda v, c, m, n: Markup(
            '<a class="btn btn-sm btn-outline-danger" href="{}">Refunds</a>'
        ).format(url_for("refunds.payment", payment_id=m.id)),
        "transitions": lambda v, c, m, n: Markup("<br>").join(
            f"{t.created_at:%Y-%m-%d %H:%M:%S} {t.from_status or '-'} -> {t.to_status} "
            f"({t.source}{', ' + t.actor if t.actor else ''}): {t.reason}"
            for t in retention.transitions_of(m.id)
        ),
    }


class OrderView(ReadOnlyView):
    column_list = (
        "id",
        "customer_id",
        "status",
        "total_minor",
        "currency",
        "created_at",
        "paid_at",
    )
    column_filters = ("status", "created_at", "total_minor", "customer.email", "customer_id")
    column_formatters = {"total_minor": money_column, "customer_id": CUSTOMER}
    column_default_sort = ("id", True)
    # Named, never the `customer` relationship (it refuses to load: no money path reads it).
    column_details_list = (*column_list, "updated_at", "lines", "payments", "refunds")
    column_formatters_detail: dict[str, Any] = {
        "total_minor": money_column,
        "customer_id": CUSTOMER,
        "lines": lambda v, c, m, n: Markup("<br>").join(
            f"{line.quantity} x {line.product.sku} {line.product.name} at "
            f"{money_text(line.unit_price_minor, m.currency)} = "
            f"{money_text(line.line_total_minor, m.currency)}"
            for line in m.lines
        ),
        "payments": lambda v, c, m, n: (
            Markup("<br>").join(
                Markup("{}: {}").format(named_payment(p.id), p.status.value)
                for p in backoffice_records.order_records(m.id, "payments")
            )
            or "none (unpaid, or paid from the wallet: see the ledger)"
        ),
        "refunds": lambda v, c, m, n: (
            Markup("<br>").join(
                Markup('<a href="{}">refund #{}</a>: {}, {}').format(
                    url_for("admin_refunds.details_view", id=r.id),
                    r.id,
                    r.status.value,
                    money_text(r.amount_minor, r.currency),
                )
                for r in backoffice_records.order_records(m.id, "refunds")
            )
            or "none"
        ),
    }


class WebhookView(ReadOnlyView):
    column_list = (
        "id",
        "provider",
        "event_id",
        "event_type",
        "state",
        "payment_id",
        "note",
        "event_created_at",
        "received_at",
    )
    column_filters = ("provider", "state", "event_type", "received_at", "payment_id")
    column_searchable_list = ("event_id",)
    column_default_sort = ("id", True)
    column_details_list = (*column_list, "processed_at", "payload")
    column_formatters = {"payment_id": PAYMENT}


class WalletView(ReadOnlyView):
    column_list = ("id", "customer_id", "currency", "balance_minor", "updated_at")
    column_filters = ("currency", "customer_id")
    column_formatters = {"balance_minor": money_column, "customer_id": CUSTOMER}


class LedgerView(ReadOnlyView):
    column_list = (
        "id",
        "wallet_id",
        "operation_id",
        "kind",
        "amount_minor",
        "balance_after_minor",
        "source",
        "memo",
        "created_at",
    )
    column_filters = ("wallet_id", "kind", "source_kind", "source_id")
    column_searchable_list = ("operation_id", "memo")

    def currency_of(self, model: Any) -> str:
        return wallet_currency(model.wallet_id)

    column_default_sort = ("id", True)
    column_formatters: dict[str, Any] = {
        **{
            name: lambda v, c, m, n: money_text(getattr(m, n), wallet_currency(m.wallet_id))
            for name in ("amount_minor", "balance_after_minor")
        },
        "wallet_id": WALLET,
        # "payment 12", "refund 3": the movement the entry belongs to (typed columns), as
        # a link; the memo is a client's text, shown as text and never linked
        "source": lambda v, c, m, n: (
            "" if m.source is None else str(m.source) if c is None else record_links(str(m.source))
        ),
    }


class CustomerView(ReadOnlyView):
    """A customer's page: their orders, payments, refunds, wallets and emails, each a link."""

    column_list = ("id", "email", "created_at")
    column_details_list = (
        *column_list,
        "orders",
        "payments",
        "refunds",
        "wallets",
        "emails",
    )
    column_searchable_list = ("email",)
    column_formatters_detail = {
        name: lambda v, c, m, n: customer_records(m, n)
        for name in ("orders", "payments", "refunds", "wallets", "emails")
    }


def customer_records(customer: Customer, what: str) -> Markup:
    """One kind of a customer's records (services/backoffice/records.py), each a link."""
    lines: list[Markup] = []
    for row in backoffice_records.customer_records(customer, what):
        if what == "orders":
            url, text = url_for("admin_orders.details_view", id=row.id), "order"
            said = f"{row.status.value}, {money_text(row.total_minor, row.currency)}"
        elif what == "payments":
            lines.append(Markup("{}: {}").format(named_payment(row.id), row.status.value))
            continue
        elif what == "refunds":
            url, text = url_for("admin_refunds.details_view", id=row.id), "refund"
            said = f"{row.status.value}, {money_text(row.amount_minor, row.currency)}"
        elif what == "wallets":
            url, text = url_for("admin_wallets.details_view", id=row.id), "wallet"
            said = money_text(row.balance_minor, row.currency)
        else:
            url, text = url_for("outbox.details_view", id=row.id), "email"
            said = f"{row.kind.value}, {row.status.value}"
        lines.append(Markup('<a href="{}">{} #{}</a>: {}').format(url, text, row.id, said))
    return Markup("<br>").join(lines) if lines else Markup("none")
