"""The sandbox's server: it can stop listening on demand (connection refused)."""

from __future__ import annotations

from typing import Any

from providers.outcomes import NotSent, Succeeded
from tests.providers.stripe.test_client import charge_request, client


def test_refuse_fault_stops_the_sandbox_listening(sandbox: Any) -> None:
    sandbox.add_fault("refuse", seconds=1.5)
    import time

    time.sleep(0.4)  # the listening socket closes within one poll interval
    assert isinstance(client(sandbox).charge(charge_request()), NotSent)
    time.sleep(1.6)
    assert isinstance(client(sandbox).charge(charge_request(payment_id=2)), Succeeded)
