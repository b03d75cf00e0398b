"""`flask wallet audit`."""

from __future__ import annotations

import sys

import click
from flask.cli import AppGroup

from services.wallet.audit import audit_wallets

wallet_cli = AppGroup("wallet", help="Wallet maintenance.")


@wallet_cli.command("audit")
def audit_command() -> None:
    """Check balance == sum(ledger) per wallet, and the ledger against top-ups and orders;
    exit 1 on any mismatch."""
    result = audit_wallets()
    for mismatch in result.mismatches:
        click.echo(mismatch)
    click.echo(
        f"wallet audit: {result.checked_wallets} wallets, {len(result.mismatches)} mismatches"
    )
    if not result.is_ok:
        sys.exit(1)
