"""The dashboard's disputes: every dispute the provider reported (they are answered in
the provider's own dashboard; the overview lists the open ones). One in review (our
records and the provider's disagree) is decided here by an operator: won or lost, with
a reason, recorded with their email."""

from __future__ import annotations

from typing import Any

from flask import redirect, url_for
from flask.typing import ResponseReturnValue
from flask_admin import expose
from flask_wtf.csrf import generate_csrf
from markupsafe import Markup

from blueprints.admin.base import PAYMENT, ReadOnlyView, decide_from_form, money_column
from models import DisputeStatus
from services.backoffice import actions, admins

DECIDE_FORM = Markup(
    '<form method="post" action="{action}" class="card card-body decide-dispute">'
    '<input type="hidden" name="csrf_token" value="{token}">'
    "<p>In review: what does the provider's dashboard say?</p>"
    '<label>Outcome <select name="outcome" class="form-control">'
    '<option value="won">Won: the money stays with the shop</option>'
    '<option value="lost">Lost: the bank took the money</option></select></label>'
    '<label>Reason (required, recorded with your email) <input name="reason" '
    'class="form-control" required minlength="5"></label>'
    '<label><input type="checkbox" name="confirm" value="yes" required> '
    "I checked this with the provider.</label>"
    '<button class="btn btn-warning">Decide dispute #{id}</button></form>'
)


def _decision(view: Any, context: Any, model: Any, name: str) -> Any:
    """The status, and for a dispute in review an operator's form to decide it."""
    status = model.status.value
    if model.status != DisputeStatus.NEEDS_REVIEW or not admins.can(
        admins.current_admin(), admins.OPERATE
    ):
        return status
    action = url_for("admin_disputes.decide", dispute_id=model.id)
    form = Markup(DECIDE_FORM.format(action=action, token=generate_csrf(), id=model.id))
    return Markup("{}<br>{}").format(status, form)


class DisputeView(ReadOnlyView):
    requires = {"decide": admins.OPERATE}

    column_list = (
        "id",
        "status",
        "payment_id",
        "provider",
        "provider_dispute_id",
        "amount_minor",
        "reason",
        "evidence_due_by",
        "is_effect_applied",
        "created_at",
    )
    column_labels = {
        "provider_dispute_id": "Provider's id",
        "amount_minor": "Amount",
        "is_effect_applied": "Funds withdrawn",
    }
    column_filters = ("status", "provider", "reason", "created_at", "evidence_due_by")
    column_searchable_list = ("provider_dispute_id",)
    column_default_sort = ("id", True)
    column_formatters: dict[str, Any] = {"amount_minor": money_column, "payment_id": PAYMENT}
    column_details_list = (*column_list, "currency", "withdrawn_minor", "updated_at")
    column_formatters_detail: dict[str, Any] = {
        "amount_minor": money_column,
        "withdrawn_minor": money_column,
        "payment_id": PAYMENT,
        "status": _decision,
    }

    @expose("/decide/<id:dispute_id>", methods=["POST"])
    def decide(self, dispute_id: int) -> ResponseReturnValue:
        """A dispute in review: the operator says how it ended, with a reason."""
        decide_from_form(actions.decide_dispute, dispute_id)
        return redirect(url_for(".details_view", id=dispute_id), code=303)
