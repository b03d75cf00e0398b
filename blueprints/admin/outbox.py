"""The outbox in the dashboard: every email with its status, attempts and last error;
an admin opens a message as it was (or will be) sent."""

from __future__ import annotations

from typing import Any

from flask import abort, flash, redirect, url_for
from flask.typing import ResponseReturnValue
from flask_admin import expose
from markupsafe import Markup

from blueprints.admin.base import ReadOnlyView, named_payment, remember_payment_names
from models import EmailKind
from services.backoffice import admins
from services.notifications import emails as notifications
from services.notifications.rendering import rendered_message


def _open_link(view: Any, context: Any, model: Any, name: str) -> Any:
    if context is None:  # the CSV export: the bare id
        return model.id
    return Markup('<a href="{}">#{}</a>').format(
        view.get_url(".message", outbox_id=model.id), model.id
    )


PAYMENT_PAGE = "story.payment"
# What an email is about, by its kind: the page of its subject.
SUBJECT_PAGES = {
    EmailKind.WELCOME: ("admin_customers.details_view", "id"),
    EmailKind.RECEIPT: ("story.payment", "payment_id"),
    EmailKind.PAYMENT_FAILED: ("story.payment", "payment_id"),
    EmailKind.REVIEW_ALERT: ("story.payment", "payment_id"),
    EmailKind.WALLET_RECEIPT: ("admin_orders.details_view", "id"),
    EmailKind.REFUND: ("admin_refunds.details_view", "id"),
    EmailKind.REFUND_ALERT: ("admin_refunds.details_view", "id"),
    EmailKind.REFUND_FAILED: ("admin_refunds.details_view", "id"),
    EmailKind.REFUND_DECLINED: ("refund_requests.index", ""),
    EmailKind.DISPUTE_ALERT: ("admin_disputes.details_view", "id"),
}


def _subject_link(view: Any, context: Any, model: Any, name: str) -> Any:
    page = SUBJECT_PAGES.get(model.kind)
    if context is None or page is None:  # the CSV export, or an alert (no page of its own)
        return model.subject_id
    if page[0] == PAYMENT_PAGE:  # a payment, named as people name it
        return named_payment(model.subject_id)
    url = url_for(page[0], **({page[1]: model.subject_id} if page[1] else {}))
    return Markup('<a href="{}">#{}</a>').format(url, model.subject_id)


class OutboxView(ReadOnlyView):
    requires = {"resend": admins.OPERATE}

    column_list = (
        "id",
        "kind",
        "status",
        "recipient",
        "subject_id",
        "attempts",
        "last_error",
        "next_attempt_at",
        "sent_at",
        "created_at",
    )
    column_filters = ("status", "kind", "recipient", "created_at")
    column_searchable_list = ("recipient",)
    column_default_sort = ("id", True)
    column_formatters: dict[str, Any] = {"id": _open_link, "subject_id": _subject_link}

    def get_list(self, *args: Any, **kwargs: Any) -> Any:
        count, found = super().get_list(*args, **kwargs)
        paying = [
            r.subject_id for r in found if SUBJECT_PAGES.get(r.kind, ("",))[0] == PAYMENT_PAGE
        ]
        remember_payment_names(paying)  # the page's payment names in one query
        return count, found

    @expose("/message/<id:outbox_id>")
    def message(self, outbox_id: int) -> ResponseReturnValue:
        shown = rendered_message(outbox_id)
        if shown is None:
            abort(404)
        return self.render("dashboard/email.html", message=shown)

    @expose("/resend/<id:outbox_id>", methods=["POST"])
    def resend(self, outbox_id: int) -> ResponseReturnValue:
        admin = admins.current_admin()
        assert admin is not None
        if notifications.resend(outbox_id, admin.email):
            flash(f"Email #{outbox_id} is queued to be sent again.", "success")
        else:
            flash(f"Email #{outbox_id} is not failed: nothing to send again.", "error")
        return redirect(url_for(".message", outbox_id=outbox_id), code=303)
