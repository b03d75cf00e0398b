"""Payouts as their events told them, found by provider and id."""

from __future__ import annotations

from flask import Flask

from extensions import db
from models import PayoutStatus, ProviderPayout
from models.types import utcnow
from services.payouts.reads import told


def test_only_the_providers_payouts_of_those_ids_are_told(app_ctx: Flask) -> None:
    for provider, payout_id in (("stripe", "po_1"), ("stripe", "po_2"), ("braintree", "po_1")):
        db.session.add(
            ProviderPayout(
                provider=provider,
                payout_id=payout_id,
                amount_minor=100,
                currency="EUR",
                status=PayoutStatus.PAID,
                event_created_at=utcnow(),
            )
        )
    db.session.flush()
    found = told("stripe", ["po_1", "po_3", "po_1"])
    assert list(found) == ["po_1"] and found["po_1"].provider == "stripe"
    assert told("stripe", []) == {}
