"""Job throttling per key (a provider's queue), the analogue of Laravel's ThrottlesExceptions.

After `max_exceptions` exceptions within `window_s`, jobs for the key are not run
for `decay_s`: each one is deferred (scheduled again by RQ) with a jittered
delay, neither failed nor run. A success clears the count. State lives in
Redis and changes only through Lua scripts, so every worker agrees.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis import Redis

# KEYS[1] hash; ARGV: max_exceptions, window_ms, decay_ms
_FAILURE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window_until = tonumber(redis.call('HGET', KEYS[1], 'window_until') or 0)
if now >= window_until then
  redis.call('HSET', KEYS[1], 'count', 0, 'window_until', now + tonumber(ARGV[2]))
end
local count = redis.call('HINCRBY', KEYS[1], 'count', 1)
if count >= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'throttled_until', now + tonumber(ARGV[3]), 'count', 0)
end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]))
return count
"""

_REMAINING = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local until_ms = tonumber(redis.call('HGET', KEYS[1], 'throttled_until') or 0)
if until_ms > now then
  redis.call('HINCRBY', KEYS[1], 'deferred', 1)
  return until_ms - now
end
return 0
"""


@dataclass(frozen=True)
class ThrottleConfig:
    max_exceptions: int = 5  # exceptions within the window that throttle the key
    window_s: float = 60.0
    decay_s: float = 30.0  # how long jobs are held back
    jitter_s: float = 10.0  # deferred jobs come back spread over this much time


class JobThrottle:
    def __init__(self, redis: Redis, key: str, config: ThrottleConfig) -> None:
        self.redis = redis
        self.key = f"throttle:{{{key}}}"
        self.config = config
        self._failure = redis.register_script(_FAILURE)
        self._remaining = redis.register_script(_REMAINING)

    def remaining_s(self) -> float:
        """Seconds until jobs for this key may run again (0: run now)."""
        return int(self._remaining(keys=[self.key])) / 1000

    def record_failure(self) -> None:
        c = self.config
        self._failure(
            keys=[self.key], args=[c.max_exceptions, int(c.window_s * 1000), int(c.decay_s * 1000)]
        )

    def record_success(self) -> None:
        self.redis.hdel(self.key, "count", "throttled_until", "window_until")
