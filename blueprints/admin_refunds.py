"""Refunds in the dashboard: a payment's (or a wallet-paid order's) refund page, with the
amount, a mandatory reason and a confirmation; the page's idempotency key makes a double
submit one refund. And the refunds among the records."""

from __future__ import annotations

import uuid
from typing import Any

from flask import flash, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_admin import BaseView, expose

from blueprints.admin import AdminOnly, ReadOnlyView, money_column
from models.money import InvalidAmountError, parse_major_amount
from services import admin_auth
from services.errors import ClientError
from services.refund_views import refund_page
from services.refunds import refund_payment, refund_wallet_order


class RefundsView(AdminOnly, BaseView):
    def is_visible(self) -> bool:
        return False  # reached from a payment's page (and the refunds among the records)

    @expose("/")
    def index(self) -> ResponseReturnValue:
        return redirect(url_for("admin_refunds.index_view"))

    @expose("/payment/<id:payment_id>", methods=["GET", "POST"])
    def payment(self, payment_id: int) -> ResponseReturnValue:
        return self._page("payment", payment_id)

    @expose("/order/<id:order_id>", methods=["GET", "POST"])
    def order(self, order_id: int) -> ResponseReturnValue:
        return self._page("order", order_id)

    def _page(self, what: str, target_id: int) -> ResponseReturnValue:
        page = refund_page(what, target_id)
        if page is None:
            flash(f"No {what} {target_id}.", "error")
            return redirect(url_for("admin.index"))
        if request.method == "POST" and self._submit(what, target_id, page.currency):
            return redirect(request.path, code=303)  # the page again, with the refund
        return self.render(
            "dashboard/refund.html", page=page, what=what, idempotency_key=uuid.uuid4()
        )

    def _submit(self, what: str, target_id: int, currency: str) -> bool:
        admin = admin_auth.current_admin()
        assert admin is not None
        form = request.form
        if form.get("confirm") != "yes":
            flash("Tick the confirmation box to refund.", "error")
            return False
        try:
            raw = form.get("amount", "").strip()
            amount = parse_major_amount(raw, currency) if raw else None
            key = uuid.UUID(form.get("idempotency_key", ""))
            refund_with = refund_payment if what == "payment" else refund_wallet_order
            refund, is_new = refund_with(
                target_id, amount, form.get("reason", ""), admin.email, key
            )
        except (ClientError, InvalidAmountError, ValueError) as exc:
            flash(str(exc), "error")
            return False
        flash(
            f"Refund #{refund.id} of {refund.amount_minor} {refund.currency}: "
            f"{refund.status.value}" + ("" if is_new else " (already requested with this form)"),
            "success",
        )
        return True


class RefundView(ReadOnlyView):
    column_list = (
        "id",
        "status",
        "payment_id",
        "order_id",
        "provider",
        "amount_minor",
        "provider_refund_id",
        "actor",
        "created_at",
    )
    column_filters = ("status", "provider")
    column_searchable_list = ("provider_refund_id",)
    column_default_sort = ("id", True)
    column_formatters: dict[str, Any] = {"amount_minor": money_column}
    column_details_list = (
        *column_list,
        "currency",
        "reason",
        "idempotency_key",
        "failure_code",
        "first_sent_at",
        "reconcile_attempts",
        "next_reconcile_at",
        "last_error",
        "updated_at",
    )
