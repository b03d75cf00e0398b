"""Refunds in the dashboard: a payment's (or a wallet-paid order's) refund page, with the
amount, a mandatory reason and a confirmation; the page's idempotency key makes a double
submit one refund. And the refunds among the records."""

from __future__ import annotations

import uuid
from typing import Any

from flask import flash, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_admin import BaseView, expose
from flask_admin.contrib.sqla import filters as sqla_filters

from blueprints.admin.base import (
    ORDER,
    PAYMENT,
    AdminOnly,
    ReadOnlyView,
    decide_from_form,
    money_column,
)
from models import Refund, money
from models.money import InvalidAmountError
from models.types import parse_uuid
from services.backoffice import actions, admins, records
from services.platform.errors import ClientError
from services.platform.locales import amount_message, current_locale, money_text
from services.refunds.issue import refund_payment, refund_wallet_order
from services.refunds.reads import refund_page


class RefundPagesView(AdminOnly, BaseView):
    requires = {"payment": admins.REFUND, "order": admins.REFUND, "decide": admins.OPERATE}

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

    @expose("/decide/<id:refund_id>", methods=["POST"])
    def decide(self, refund_id: int) -> ResponseReturnValue:
        """A refund in review: the admin says what happened, with a reason."""
        decide_from_form(actions.decide_refund, refund_id)
        back = request.form.get("back", "")
        return redirect(
            back if back.startswith("/admin/refunds/") else url_for("admin.index"), code=303
        )

    def _page(self, what: str, target_id: int) -> ResponseReturnValue:
        page = refund_page(what, target_id)
        if page is None:
            flash(f"No {what} {target_id}.", "error")
            return redirect(url_for("admin.index"))
        if request.method == "POST" and "amount_minor" not in request.form:
            review = self._review(page.currency, page.left_minor)
            if review is not None:  # what would be refunded, to confirm before it is
                return self.render(
                    "dashboard/refund.html",
                    page=page,
                    what=what,
                    target_id=target_id,
                    review=review,
                )
        elif request.method == "POST" and self._submit(what, target_id):
            return redirect(request.path, code=303)  # the page again, with the refund
        return self.render(
            "dashboard/refund.html",
            page=page,
            what=what,
            target_id=target_id,
            review=None,
            idempotency_key=uuid.uuid4(),
            typed=request.form.get("amount", ""),
            reason=request.form.get("reason", ""),
        )

    def _review(self, currency: str, left_minor: int) -> dict[str, Any] | None:
        """The typed amount read in the admin's language (empty: all that is left), with
        the reason and the form's key; None, with the reason flashed, when refused."""
        form = request.form
        reason = form.get("reason", "").strip()
        if len(reason) < 5:
            flash("Give the reason for the refund (5 characters at least).", "error")
            return None
        try:
            raw = form.get("amount", "").strip()
            amount = money.parse(raw, currency, current_locale()) if raw else None
            key = parse_uuid(form.get("idempotency_key", ""))
        except (InvalidAmountError, ValueError) as exc:
            flash(
                amount_message(exc) if isinstance(exc, InvalidAmountError) else "Reload the page.",
                "error",
            )
            return None
        return {
            "amount_minor": amount.amount_minor if amount else left_minor,
            "currency": currency,
            "reason": reason,
            "idempotency_key": key,
        }

    def _submit(self, what: str, target_id: int) -> bool:
        admin = admins.current_admin()
        assert admin is not None
        form = request.form
        if form.get("confirm") != "yes":
            flash("Confirm the refund on its review.", "error")
            return False
        try:
            amount_minor = money.reviewed_minor(form.get("amount_minor", ""))
            key = parse_uuid(form.get("idempotency_key", ""))
            refund_with = refund_payment if what == "payment" else refund_wallet_order
            refund, is_new = refund_with(
                target_id, amount_minor, form.get("reason", ""), admin.email, key
            )
        except (ClientError, InvalidAmountError, ValueError) as exc:
            flash(str(exc), "error")
            return False
        amount = money_text(refund.amount_minor, refund.currency)
        flash(
            (
                f"Refund #{refund.id} of {amount} is recorded and goes to {refund.provider} "
                "now; its status below follows what the provider says."
            )
            if is_new
            else f"Refund #{refund.id} of {amount} was already made with this form.",
            "success",
        )
        return True


class _CustomerEmail(sqla_filters.FilterEqual):
    """The customer's refunds, whether through a payment or a wallet-paid order."""

    def apply(self, query: Any, value: Any, alias: Any = None) -> Any:
        return query.filter(records.refunds_of_email(str(value)))


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
    column_filters = (
        "status",
        "provider",
        "created_at",
        "amount_minor",
        "payment_id",
        _CustomerEmail(Refund.id, "Customer email"),
    )
    column_searchable_list = ("provider_refund_id",)
    column_default_sort = ("id", True)
    column_formatters: dict[str, Any] = {
        "amount_minor": money_column,
        "payment_id": PAYMENT,
        "order_id": ORDER,
    }
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
