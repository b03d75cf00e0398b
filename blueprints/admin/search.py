"""The search box's answers: one payment opens its page; several are listed."""

from __future__ import annotations

from flask import redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_admin import BaseView, expose

from blueprints.admin.base import AdminOnly
from services.backoffice.search import search


class SearchView(AdminOnly, BaseView):
    def is_visible(self) -> bool:
        return False  # the box is on every page

    @expose("/")
    def index(self) -> ResponseReturnValue:
        query = request.args.get("q", "")
        hits = search(query)
        if len(hits) == 1:
            return redirect(url_for("story.payment", payment_id=hits[0].payment.id))
        return self.render("dashboard/search.html", query=query, hits=hits)
