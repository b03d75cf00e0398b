"""A payout's statuses in order (paid may still fail, nothing comes after failed or
canceled) and one row per provider and payout id, held by the database."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import PayoutStatus, ProviderPayout
from models.types import utcnow


def test_a_status_ranks_after_every_one_it_may_follow() -> None:
    order = [PayoutStatus.PENDING, PayoutStatus.IN_TRANSIT, PayoutStatus.PAID]
    assert [s.rank for s in order] == sorted(s.rank for s in order) == [0, 1, 2]
    assert PayoutStatus.FAILED.rank == PayoutStatus.CANCELED.rank > PayoutStatus.PAID.rank


def test_one_payout_is_one_row(app_ctx: Flask) -> None:
    for _ in range(2):
        db.session.add(
            ProviderPayout(
                provider="stripe",
                payout_id="po_1",
                amount_minor=100,
                currency="EUR",
                status=PayoutStatus.PAID,
                event_created_at=utcnow(),
            )
        )
    with pytest.raises(IntegrityError, match="uq_provider_payouts_provider_payout_id"):
        db.session.flush()
    db.session.rollback()
