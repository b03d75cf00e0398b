"""Periodic jobs run by the scheduler program: (function, interval in seconds)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jobs.payments import sweep_pending_payments_job, sweep_unknown_payments_job

# Each runs on the maintenance queue; the sweeps only enqueue, so they are cheap.
PERIODIC_JOBS: list[tuple[Callable[..., Any], int]] = [
    (sweep_pending_payments_job, 30),
    (sweep_unknown_payments_job, 30),
]
