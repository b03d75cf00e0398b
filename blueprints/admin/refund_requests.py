"""Customers' refund requests in the dashboard: the waiting ones, oldest first, each
approved (a refund through the refund path, all that is left or the amount typed) or
declined with a message the customer is emailed; then the ones decided lately."""

from __future__ import annotations

from flask import flash, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_admin import BaseView, expose

from blueprints.admin.base import AdminOnly, remember_payment_names
from models import RefundRequestStatus, money
from models.money import InvalidAmountError
from models.types import utcnow
from services.backoffice import admins
from services.platform.errors import ClientError
from services.platform.locales import amount_message, current_locale
from services.refunds import requests as refund_requests


class RefundRequestsView(AdminOnly, BaseView):
    requires = {"approve": admins.REFUND, "decline": admins.REFUND}

    @expose("/")
    def index(self) -> ResponseReturnValue:
        waiting = refund_requests.queue(RefundRequestStatus.WAITING)
        decided = [
            *refund_requests.queue(RefundRequestStatus.APPROVED, limit=20),
            *refund_requests.queue(RefundRequestStatus.DECLINED, limit=20),
        ]
        remember_payment_names(row.payment_id for row in [*waiting, *decided])
        return self.render(
            "dashboard/refund_requests.html", waiting=waiting, decided=decided, now=utcnow()
        )

    @expose("/<id:request_id>/approve", methods=["POST"])
    def approve(self, request_id: int) -> ResponseReturnValue:
        admin = admins.current_admin()
        assert admin is not None
        form = request.form
        try:
            if form.get("confirm") != "yes":
                raise ClientError("tick the confirmation: approving refunds money")
            raw = form.get("amount", "").strip()
            currency = refund_requests.currency_of(request_id)
            amount = money.parse(raw, currency, current_locale()) if raw else None
            said = refund_requests.approve(
                request_id, amount.amount_minor if amount else None, admin.email
            )
            flash(said, "success")
        except InvalidAmountError as exc:
            flash(amount_message(exc), "error")
        except ClientError as exc:
            flash(str(exc), "error")
        return redirect(url_for(".index"), code=303)

    @expose("/<id:request_id>/decline", methods=["POST"])
    def decline(self, request_id: int) -> ResponseReturnValue:
        admin = admins.current_admin()
        assert admin is not None
        try:
            flash(
                refund_requests.decline(request_id, request.form.get("message", ""), admin.email),
                "success",
            )
        except ClientError as exc:
            flash(str(exc), "error")
        return redirect(url_for(".index"), code=303)
