"""Periodic recovery of payments: the janitor every kind shares
(services/movements/janitor.py), for charges."""

from __future__ import annotations

from datetime import datetime

from models import Payment, PaymentStatus
from services.movements import janitor
from services.movements.kinds import CHARGE


def sweep_pending(now: datetime | None = None) -> int:
    """Enqueue pending payments nobody is working on (worker killed, Redis lost, enqueue failed)."""
    return janitor.sweep_sends(CHARGE, Payment, PaymentStatus.PENDING, now)


def sweep_unknown(now: datetime | None = None) -> int:
    """Enqueue the lookups of unknown payments that are due (or whose job was lost)."""
    return janitor.sweep_lookups(CHARGE, Payment, (PaymentStatus.UNKNOWN,), now)
