"""Redis Sentinel test steps: a failover of the group."""

from __future__ import annotations

import time

from devtools.sentinel import SentinelGroup


def fail_over(group: SentinelGroup) -> tuple[str, int]:
    """Stop the primary (SIGKILL) and wait for the Sentinels to promote the replica."""
    old = group.primary_address()
    group.primary().stop(kill=True)
    promoted(group, old)
    new = group.primary_address()
    assert new is not None and new != old
    return new


def promoted(group: SentinelGroup, old: tuple[str, int] | None, timeout_s: float = 30) -> float:
    """Wait until the Sentinels agree on another primary; how long that took."""
    started = time.monotonic()
    while group.primary_address() in (old, None):
        assert time.monotonic() - started < timeout_s, "no failover"
        time.sleep(0.1)
    return time.monotonic() - started
