"""The Books page: each reconciled day of each provider (red when it does not
reconcile), a day's items with the provider's record and ours side by side, its fees and
payouts, a day reconciled again; and the accountant's tools: the trial balance as of a
day, an account's ledger, the payout report, a period's journal as CSV or beancount."""

from __future__ import annotations

import re
from collections import defaultdict
from datetime import date, timedelta

from flask import Response, abort, flash, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_admin import BaseView, expose

from blueprints.admin.base import AdminOnly
from models.journal import ACCOUNT_PATTERN
from models.types import utcnow
from services.backoffice import admins
from services.books import exports, reports
from services.statements import closing, days
from services.statements.reconcile import AGREEING, BALANCE_PROVIDERS

LEDGER_LINES = 2000  # a page's lines; the export has every one
MAX_PERIOD_DAYS = 366
ACCOUNT_RE = re.compile(ACCOUNT_PATTERN)


def _date_arg(name: str, default: date) -> date:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        return date.fromisoformat(raw)
    except ValueError:
        abort(400)


def _period() -> tuple[date, date]:
    """The period asked (`from`, `to`, both days included): a week to today by default;
    a period backwards or longer than a year is a 400."""
    end = _date_arg("to", utcnow().date())
    start = _date_arg("from", end - timedelta(days=6))
    if start > end or (end - start).days >= MAX_PERIOD_DAYS:
        abort(400)
    return start, end


def _actor() -> str:
    admin = admins.current_admin()
    return str(admin.email) if admin is not None else "an admin"


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
    requires = {"again": admins.OPERATE, "close": admins.OPERATE, "reopen": admins.OPERATE}

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
            trail=closing.history(found.id),
        )

    @expose("/<provider>/<day>/close", methods=["POST"])
    def close(self, provider: str, day: str) -> ResponseReturnValue:
        wanted = _day(day)
        try:
            closing.close(_provider(provider), wanted, _actor())
        except closing.CannotClose as exc:
            flash(str(exc), "error")
        else:
            flash(f"The books of {provider} for {wanted} are closed.", "success")
        return redirect(url_for(".day", provider=provider, day=wanted.isoformat()), code=303)

    @expose("/<provider>/<day>/reopen", methods=["POST"])
    def reopen(self, provider: str, day: str) -> ResponseReturnValue:
        wanted = _day(day)
        try:
            closing.reopen(_provider(provider), wanted, _actor(), request.form.get("reason", ""))
        except closing.CannotClose as exc:
            flash(str(exc), "error")
        else:
            flash(f"The books of {provider} for {wanted} are open again.", "success")
        return redirect(url_for(".day", provider=provider, day=wanted.isoformat()), code=303)

    @expose("/export")
    def export(self) -> ResponseReturnValue:
        """The journal of a period, both providers in one file: CSV or beancount."""
        start, end = _period()
        kind = request.args.get("format", "csv")
        if kind not in exports.FORMATS:
            abort(400)
        chunks = exports.as_csv if kind == "csv" else exports.as_beancount
        name = f"journal-{start}-to-{end}.{'csv' if kind == 'csv' else 'beancount'}"
        # Whole before it is sent (a stream would hold the request's context open until
        # the client read it all); a longer period: `flask books export` streams it.
        return Response(
            "".join(chunks(start, end)),
            mimetype="text/csv" if kind == "csv" else "text/plain",
            headers={"Content-Disposition": f"attachment; filename={name}"},
        )

    @expose("/trial-balance")
    def trial_balance(self) -> ResponseReturnValue:
        as_of = _date_arg("as_of", utcnow().date())
        rows = reports.trial_balance(as_of)
        totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for row in rows:
            totals[row.currency][0] += row.debit_minor
            totals[row.currency][1] += row.credit_minor
        return self.render(
            "dashboard/books_trial_balance.html", as_of=as_of, rows=rows, totals=dict(totals)
        )

    @expose("/ledger")
    def ledger(self) -> ResponseReturnValue:
        account = request.args.get("account", "")
        if not ACCOUNT_RE.match(account):
            abort(404)
        start, end = _period()
        opening, lines = reports.ledger(account, start, end)
        return self.render(
            "dashboard/books_ledger.html",
            account=account,
            start=start,
            end=end,
            opening=opening,
            lines=lines[:LEDGER_LINES],
            cut=len(lines) > LEDGER_LINES,
        )

    @expose("/payouts")
    def payouts(self) -> ResponseReturnValue:
        return self.render("dashboard/books_payouts.html", payouts=days.payout_report())

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
