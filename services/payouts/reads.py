"""Payouts as their events told them, for the books' reconciliation and its page."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select

from extensions import db
from models import ProviderPayout


def told(provider: str, payout_ids: Iterable[str]) -> dict[str, ProviderPayout]:
    """The payouts of these ids that the provider's events recorded, by id."""
    ids = sorted(set(payout_ids))
    if not ids:
        return {}
    found = db.session.scalars(
        select(ProviderPayout).where(
            ProviderPayout.provider == provider, ProviderPayout.payout_id.in_(ids)
        )
    )
    return {payout.payout_id: payout for payout in found}
