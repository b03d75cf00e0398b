"""Periodic jobs run by the scheduler program: (function, interval in seconds)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Filled by the capabilities that need sweeps (stale pending payments, due
# reconciliations, webhook backfill); each entry runs on the maintenance queue.
PERIODIC_JOBS: list[tuple[Callable[..., Any], int]] = []
