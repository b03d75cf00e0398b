"""A day for the books' pages and reads: one of our charges matched and a fee adjustment
of the provider's that our books do not have (a red day), reconciled."""

from __future__ import annotations

from datetime import date
from typing import Any

from flask import Flask

from models.types import utcnow
from services.statements import reconcile
from tests.helpers import charge_payment, committed_payment


def a_red_day(app: Flask, sandbox: Any) -> date:
    """Today, reconciled: our 10.00 charge matched, a 1.25 fee adjustment to look at."""
    payment_id = committed_payment(app)
    with app.app_context():
        charge_payment(payment_id)
    sandbox.plant_fee_adjustment(125)
    today = utcnow().date()
    with app.app_context():
        reconcile.reconcile("stripe", today)
    return today
