"""A payment's page in the dashboard: the verdict in one sentence, then everything that
happened to it, in order (services/backoffice/timeline.py)."""

from __future__ import annotations

import uuid

from flask import abort
from flask.typing import ResponseReturnValue
from flask_admin import BaseView, expose

from blueprints.admin.base import AdminOnly, console_time
from services.backoffice.timeline import story


class PaymentStoryView(AdminOnly, BaseView):
    def is_visible(self) -> bool:
        return False  # reached from the unknown list, the records and the search

    @expose("/")
    def index(self) -> ResponseReturnValue:
        abort(404)

    @expose("/<id:payment_id>")
    def payment(self, payment_id: int) -> ResponseReturnValue:
        found = story(payment_id, console_time)
        if found is None:
            abort(404)
        return self.render(
            "dashboard/story.html",
            story=found,
            refund_key=uuid.uuid4(),  # born with the page, like the refund page's form
        )
