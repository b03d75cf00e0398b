"""`flask books trial-balance`, `flask books rebuild-check`, `flask books reconcile
--date YYYY-MM-DD`, `flask books export`, `flask books close` and `flask books reopen`."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any

import click
from flask.cli import AppGroup

from extensions import db
from services.books import exports, journal, rebuild
from services.platform.locales import money_text
from services.statements import closing, days
from services.statements.reconcile import AGREEING, BALANCE_PROVIDERS

books_cli = AppGroup("books", help="The books: the double-entry journal (docs/books.md).")


@books_cli.command("trial-balance")
def trial_balance_command() -> None:
    """Print every account's balance and what they add up to per currency; exit 1
    unless that is zero in every currency."""
    for (account, currency), balance in sorted(journal.balances().items()):
        click.echo(f"{account:<24} {currency} {money_text(balance, currency):>16}")
    totals = journal.trial_balance()
    for currency, total in sorted(totals.items()):
        click.echo(f"{'total':<24} {currency} {money_text(total, currency):>16}")
    broken = {currency: total for currency, total in totals.items() if total}
    click.echo(f"trial balance: {'broken ' + str(broken) if broken else 'zero'}")
    if broken:
        sys.exit(1)


@books_cli.command("reconcile")
@click.option("--date", "day", required=True, type=click.DateTime(formats=["%Y-%m-%d"]))
@click.option("--provider", type=click.Choice(BALANCE_PROVIDERS), default=BALANCE_PROVIDERS[0])
@click.option("--wait-s", type=click.FloatRange(0, 3600), default=300.0, show_default=True)
def reconcile_command(day: datetime, provider: str, wait_s: float) -> None:
    """Reconcile a day (UTC) of the provider's balance with the books, again if it was
    before: the job runs on the provider's queue; this waits for it and prints the day.
    Exit 0 when it reconciles, 1 when it does not, 2 when it did not run."""
    job_id = days.request(provider, day.date())
    if job_id is None:
        click.echo("Redis did not take the job: nothing was reconciled", err=True)
        sys.exit(2)
    outcome = days.outcome_of(job_id, wait_s)
    if outcome == "closed":
        db.session.rollback()
        found = days.day_of(provider, day.date())
        by = f" by {found.closed_by}" if found is not None else ""
        click.echo(
            f"{provider} {day.date()} is closed{by}: reopen it with a reason first "
            "(flask books reopen), or look at the open day",
            err=True,
        )
        sys.exit(2)
    if outcome not in ("reconciled", "unreconciled"):
        why = outcome or f"not run within {wait_s:g} s (is a worker on the {provider} queue?)"
        click.echo(f"{provider} {day.date()}: {why}; job {job_id}", err=True)
        sys.exit(2)
    db.session.rollback()  # what the job committed
    found = days.day_of(provider, day.date())
    assert found is not None
    click.echo(
        f"{provider} {found.day}: {found.status.value}, {found.matched} matched or booked, "
        f"{found.unmatched} to look at"
    )
    for currency, fee in sorted(days.fees_of(provider, found.id).items()):
        click.echo(f"fees {currency} {money_text(fee, currency)}")
    for item, _txn in days.items_of(found.id):
        if item.outcome in AGREEING:
            continue
        amounts = [
            f"{side} {money_text(value, item.currency)}"
            for side, value in (("theirs", item.theirs_minor), ("ours", item.ours_minor))
            if value is not None and item.currency is not None  # an unreadable item: none
        ]
        said = f" ({', '.join(amounts)})" if amounts else ""
        click.echo(f"{item.outcome.value:<20} {item.detail}{said}")
    sys.exit(0 if outcome == "reconciled" else 1)


@books_cli.command("export")
@click.option("--from", "start", required=True, type=click.DateTime(formats=["%Y-%m-%d"]))
@click.option("--to", "end", required=True, type=click.DateTime(formats=["%Y-%m-%d"]))
@click.option(
    "--format", "kind", type=click.Choice(exports.FORMATS), default="csv", show_default=True
)
@click.option("--output", type=click.File("w"), default="-", help="a file (default: stdout)")
def export_command(start: datetime, end: datetime, kind: str, output: Any) -> None:
    """The journal of the days [--from, --to] (UTC), both providers in one file: CSV, or
    beancount with each account's closing balance asserted (check it with bean-check)."""
    if end < start:
        click.echo("--to is before --from", err=True)
        sys.exit(2)
    chunks = exports.as_csv if kind == "csv" else exports.as_beancount
    for chunk in chunks(start.date(), end.date()):
        output.write(chunk)


@books_cli.command("close")
@click.option("--date", "day", required=True, type=click.DateTime(formats=["%Y-%m-%d"]))
@click.option("--provider", type=click.Choice(BALANCE_PROVIDERS), default=BALANCE_PROVIDERS[0])
@click.option("--by", "actor", required=True, help="who closes it (an email)")
def close_command(day: datetime, provider: str, actor: str) -> None:
    """Close a reconciled day: its result and items never change again (exit 1 when it
    cannot be closed, saying why)."""
    try:
        found = closing.close(provider, day.date(), actor)
    except closing.CannotClose as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    click.echo(f"{provider} {found.day}: closed by {found.closed_by}")


@books_cli.command("reopen")
@click.option("--date", "day", required=True, type=click.DateTime(formats=["%Y-%m-%d"]))
@click.option("--provider", type=click.Choice(BALANCE_PROVIDERS), default=BALANCE_PROVIDERS[0])
@click.option("--by", "actor", required=True, help="who reopens it (an email)")
@click.option("--reason", required=True, help="why (kept in the day's audit trail)")
def reopen_command(day: datetime, provider: str, actor: str, reason: str) -> None:
    """Reopen a closed day, with a reason (exit 1 when it is not closed)."""
    try:
        found = closing.reopen(provider, day.date(), actor, reason)
    except closing.CannotClose as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    click.echo(f"{provider} {found.day}: reopened by {actor}: {reason}")


@books_cli.command("rebuild-check")
def rebuild_check_command() -> None:
    """Recompute every wallet's balance and every order's paid, refunded and disputed
    amounts from the journal's postings alone and compare them with the tables; exit 1
    when any differs."""
    result = rebuild.check()
    for mismatch in result.mismatches:
        click.echo(mismatch)
    click.echo(
        f"rebuild check: {result.wallets} wallets, {result.orders} orders, "
        f"{len(result.mismatches)} mismatches"
    )
    if result.mismatches:
        sys.exit(1)
