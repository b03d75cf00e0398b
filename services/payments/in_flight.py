"""Card testing under concurrency: a charge's attempt holds a place among its customer's
(and its card's) declines while it is in flight, taken atomically before it is sent.

Declines are counted when they come back (services/payments/attempts.py), which is too
late for thirty attempts sent at once: each would find no decline counted yet. So every
charge's send first reserves a place, in one Lua step on Redis: its customer's declines in
the window plus the attempts in flight must stay under CARD_TESTING_MAX_DECLINES_PER_
CUSTOMER, and, where the card is known before the send (Stripe's fingerprint, read for a
customer who declined lately or has another attempt in flight), the card's declines plus
its attempts in flight, plus the customer's attempts whose card was not read (any of them
may be the same card), under ..._PER_CARD. Only one attempt at a time goes unread: the
first of a customer with nothing in flight and no decline. The place is given back when
the send's answer is applied (a decline has then been counted in its stead). An attempt
that finds the places taken by attempts in flight waits (its send is deferred, pending,
never failed: an outage holding thirty attempts is no card testing); one whose customer's
or card's declines reached the limit is refused. A worker that dies holding a place frees
it when the window passes. Without Redis nothing is reserved.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from redis.exceptions import RedisError

from extensions import redis_client
from services.payments.attempts import card_name, count_key
from settings import settings

log = logging.getLogger(__name__)

# KEYS: 1 the customer's declines, 2 its attempts in flight, 3 its unread attempts in
# flight, 4 this payment's place. ARGV: the customer's limit, the window (s), whether the
# customer declined lately ('1'). Returns 'full' (its declines reached the limit), 'busy'
# (with its attempts in flight: wait for their answers), 'unread' (reserved, the card need
# not be read) or 'read' (reserved: read the card, then reserve it).
_RESERVE = """
local declined = tonumber(redis.call('GET', KEYS[1]) or 0)
local flying = tonumber(redis.call('GET', KEYS[2]) or 0)
if declined >= tonumber(ARGV[1]) then return 'full' end
if declined + flying >= tonumber(ARGV[1]) then return 'busy' end
redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
if flying == 0 and declined == 0 and ARGV[3] ~= '1' then
  redis.call('INCR', KEYS[3])
  redis.call('EXPIRE', KEYS[3], ARGV[2])
  redis.call('SET', KEYS[4], KEYS[3], 'EX', ARGV[2])
  return 'unread'
end
redis.call('SET', KEYS[4], '', 'EX', ARGV[2])
return 'read'
"""
# KEYS: 1 the card's declines, 2 the card's attempts in flight, 3 the customer's unread
# attempts in flight, 4 this payment's place. ARGV: the card's limit, the window (s).
# Returns 'full' (the card's declines reached it), 'busy' (with those in flight) or 'ok'.
_RESERVE_CARD = """
local declined = tonumber(redis.call('GET', KEYS[1]) or 0)
if declined >= tonumber(ARGV[1]) then return 'full' end
local used = declined + tonumber(redis.call('GET', KEYS[2]) or 0)
  + tonumber(redis.call('GET', KEYS[3]) or 0)
if used >= tonumber(ARGV[1]) then return 'busy' end
redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('SET', KEYS[4], KEYS[2], 'EX', ARGV[2])
return 'ok'
"""
# KEYS: 1 the customer's attempts in flight, 2 this payment's place. Gives both back.
_RELEASE = """
local held = redis.call('GET', KEYS[2])
if not held then return 0 end
redis.call('DEL', KEYS[2])
if tonumber(redis.call('GET', KEYS[1]) or 0) > 0 then redis.call('DECR', KEYS[1]) end
if held ~= '' and tonumber(redis.call('GET', held) or 0) > 0 then redis.call('DECR', held) end
return 1
"""


@dataclass(frozen=True)
class Keys:
    """One customer's keys: its declines as attempts.py counts them, its attempts in
    flight, and each attempt's place (what it holds, to give back)."""

    customer_id: int

    def declines(self) -> str:
        return count_key("customer", str(self.customer_id))

    def card_declines(self, fingerprint: str) -> str:
        return count_key("card", card_name(self.customer_id, fingerprint))

    def flying(self, what: str = "all") -> str:
        return count_key("flying", f"{self.customer_id}:{what}")

    def place(self, payment_id: int) -> str:
        return f"flying:payment:{payment_id}"


def reserve(customer_id: int, payment_id: int, *, has_declined_lately: bool) -> str:
    """Take the attempt's place among the customer's: 'full' (refuse it), 'busy' (send it
    later), 'unread' (sent as it is) or 'read' (read the card's fingerprint, then
    `reserve_card`). 'unread' too when Redis cannot be asked (nothing is reserved then)."""
    keys, config = Keys(customer_id), settings().card_testing
    try:
        return _run(
            _RESERVE,
            [keys.declines(), keys.flying(), keys.flying("unread"), keys.place(payment_id)],
            [config.max_per_customer, config.window_s, "1" if has_declined_lately else "0"],
        )
    except RedisError as exc:
        log.warning("attempt of payment %s not reserved: %s", payment_id, exc)
        return "unread"


def reserve_card(customer_id: int, payment_id: int, fingerprint: str | None) -> str:
    """Take the attempt's place among its card's ('ok'), or say 'full' (the card's
    declines reached the limit) or 'busy' (with its attempts in flight: wait); a card not
    read (the provider could not say it) takes a place among the unread, which every
    card's limit counts."""
    keys, config = Keys(customer_id), settings().card_testing
    if fingerprint is None:
        limit, declines, flying = 2**31, keys.flying("none"), keys.flying("unread")
    else:
        limit, declines = config.max_per_card, keys.card_declines(fingerprint)
        flying = keys.flying(f"card:{fingerprint}")
    try:
        return _run(
            _RESERVE_CARD,
            [declines, flying, keys.flying("unread"), keys.place(payment_id)],
            [limit, config.window_s],
        )
    except RedisError as exc:
        log.warning("card of payment %s not reserved: %s", payment_id, exc)
        return "ok"


def release(customer_id: int, payment_id: int) -> None:
    """Give the attempt's places back (its answer is applied: a decline counted instead)."""
    keys = Keys(customer_id)
    try:
        _run(_RELEASE, [keys.flying(), keys.place(payment_id)], [])
    except RedisError as exc:
        log.warning("attempt of payment %s not released: %s", payment_id, exc)


def _run(script: str, keys: list[str], args: list[str | int]) -> str:
    """One of the scripts above, by its SHA (EVALSHA: its text goes to Redis once, not
    with every charge); its answer as text."""
    found = redis_client.client.register_script(script)(keys=keys, args=args)
    return found.decode() if isinstance(found, bytes) else str(found)
