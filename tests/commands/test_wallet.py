"""`flask wallet audit`: exit 0 when the books balance, 1 with each mismatch printed."""

from __future__ import annotations

from typing import Any

from flask import Flask
from sqlalchemy import update

from extensions import db
from models import Wallet
from tests.helpers import new_wallet


def test_the_audit_command_exits_by_the_result(app: Flask, runner: Any) -> None:
    wallet_id = new_wallet(app, 250)
    clean = runner.invoke(args=["wallet", "audit"])
    assert clean.exit_code == 0 and "1 wallets, 0 mismatches" in clean.output
    with app.app_context():
        db.session.execute(update(Wallet).where(Wallet.id == wallet_id).values(balance_minor=1))
        db.session.commit()
    broken = runner.invoke(args=["wallet", "audit"])
    assert broken.exit_code == 1 and f"wallet {wallet_id} (EUR): balance €0.01" in broken.output
