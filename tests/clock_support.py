"""A test's own clock for code with a clock seam (the breaker's `clock_ms`): it moves
when the test says, never by waiting."""

from __future__ import annotations

import time


class Clock:
    """Milliseconds since the epoch, starting now and moved only by `advance`."""

    def __init__(self) -> None:
        self.now_ms = int(time.time() * 1000)

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, seconds: float) -> None:
        self.now_ms += int(seconds * 1000)
