"""The breaker's tests share a clean Redis and a test clock (tests/clock_support.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis import Redis

from tests.clock_support import Clock


@pytest.fixture
def redis(server_urls: dict[str, str]) -> Iterator[Redis]:
    client = Redis.from_url(server_urls["redis"])
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()
