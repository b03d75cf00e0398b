"""The Books page: each reconciled day of each provider (red when it does not
reconcile), a day's items with the provider's record and ours side by side, its fees and
payouts, the day's journal as CSV for the accountant, and a day reconciled again."""

from __future__ import annotations

import csv
import io
from datetime import date

from flask import Response, abort, flash, redirect, url_for
from flask.typing import ResponseReturnValue
from flask_admin import BaseView, expose

from blueprints.admin.base import AdminOnly
from models.money import Money
from services.backoffice import admins
from services.statements import days
from services.statements.reconcile import AGREEING, BALANCE_PROVIDERS

CSV_HEADER = ["date", "account", "debit", "credit", "currency", "source", "provider_id"]


def _day(raw: str) -> date:
    try:
        return date.fromisoformat(raw)
    except ValueError:
        abort(404)


def _provider(name: str) -> str:
    if name not in BALANCE_PROVIDERS:
        abort(404)
    return name


class BooksView(AdminOnly, BaseView):
    requires = {"again": admins.OPERATE}

    @expose("/")
    def index(self) -> ResponseReturnValue:
        return self.render("dashboard/books.html", days=days.recent_days())

    @expose("/<provider>/<day>")
    def day(self, provider: str, day: str) -> ResponseReturnValue:
        found = days.day_of(_provider(provider), _day(day))
        if found is None:
            abort(404)
        items = days.items_of(found.id)
        return self.render(
            "dashboard/books_day.html",
            day=found,
            to_look_at=[(i, t) for i, t in items if i.outcome not in AGREEING],
            agreeing=[(i, t) for i, t in items if i.outcome in AGREEING],
            payouts=days.payouts_of(found.provider, items),
            fees=days.fees_of(provider, found.id),
        )

    @expose("/<provider>/<day>/journal.csv")
    def journal_csv(self, provider: str, day: str) -> ResponseReturnValue:
        """The day's postings, one row each, debit and credit as decimal amounts."""
        _provider(provider)
        wanted = _day(day)
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(CSV_HEADER)
        for line in days.journal_lines(wanted):
            amount = str(Money(abs(line.amount_minor), line.currency).major)
            debit, credit = (amount, "") if line.amount_minor > 0 else ("", amount)
            writer.writerow(
                [
                    line.day,
                    line.account,
                    debit,
                    credit,
                    line.currency,
                    line.source,
                    line.provider_id,
                ]
            )
        return Response(
            out.getvalue(),
            mimetype="text/csv",
            headers={"Content-Disposition": f"attachment; filename=journal-{wanted}.csv"},
        )

    @expose("/<provider>/<day>/again", methods=["POST"])
    def again(self, provider: str, day: str) -> ResponseReturnValue:
        wanted = _day(day)
        if days.request(_provider(provider), wanted) is None:
            flash("Redis did not take the job: try again in a moment.", "error")
        else:
            flash(
                f"The books of {wanted} are being reconciled again on the {provider} queue.",
                "success",
            )
        return redirect(url_for(".index"), code=303)
