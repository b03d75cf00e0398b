"""`flask seed`: demo data for development, safe to run any number of times."""

from __future__ import annotations

import click
from flask.cli import with_appcontext

from services.catalog.demo_data import seed_catalog, seed_demo_accounts
from settings import settings


@click.command("seed")
@with_appcontext
def seed_command() -> None:
    """Add the demo catalog, and outside production two demo customers and an admin."""
    seed_catalog()
    if settings().is_production:
        # The demo customers' password is published in the README: never in production.
        click.echo("seed: catalog only (APP_ENV=production: no demo accounts)")
        return
    for line in seed_demo_accounts(settings().money.currencies):
        click.echo(line)
    click.echo("seed: done")
