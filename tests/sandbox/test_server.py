"""The sandbox's server: it can stop listening on demand (connection refused)."""

from __future__ import annotations

import socket
from typing import Any
from urllib.parse import urlsplit

from providers.outcomes import NotSent, Succeeded
from tests.providers.stripe.support import charge_request, client
from tests.sandbox_support import wait_for


def _is_listening(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=0.5):
            return True
    except OSError:
        return False


def test_refuse_fault_stops_the_sandbox_listening(sandbox: Any) -> None:
    sandbox.add_fault("refuse", seconds=1.5)
    wait_for(lambda: not _is_listening(sandbox.url))  # closed within one poll interval
    assert isinstance(client(sandbox).charge(charge_request()), NotSent)
    wait_for(lambda: _is_listening(sandbox.url))  # open again after the 1.5 s
    assert isinstance(client(sandbox).charge(charge_request(payment_id=2)), Succeeded)
