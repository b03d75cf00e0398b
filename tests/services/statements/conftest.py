"""The books' reconciliation against a provider whose answers a fault proxy rewrites."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from tests.books_support import proxied_app
from tests.fault_proxy import FaultProxy


@pytest.fixture
def proxied(app: Flask, make_app: Any, sandbox: Any) -> Iterator[tuple[Flask, FaultProxy]]:
    """An app whose Stripe calls go through a fault proxy in front of the sandbox."""
    with proxied_app(make_app, sandbox) as found:
        yield found
