"""`flask books trial-balance`."""

from __future__ import annotations

import sys

import click
from flask.cli import AppGroup

from services.books import journal
from services.platform.locales import money_text

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
