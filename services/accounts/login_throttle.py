"""Login throttling for customers and admins: failed attempts counted in Redis.

Three counters per failed attempt, each for a 15-minute window that starts at the
first failure: the (account, address) pair, the address, and the account from any
address. An attempt is counted before its password is checked, atomically with the
limits' check (one Lua script), and given back when it succeeds.

The pair's limit is small, so a guesser at one address stops quickly; the
account's limit is much larger, so someone else's typing cannot lock the real
person out after a handful of tries, while a guesser spread over many addresses is
still bounded. Only failures count: a successful login clears its account's counters.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from contextlib import suppress
from typing import Any, Protocol, TypeVar

from redis.exceptions import RedisError
from werkzeug.security import check_password_hash, generate_password_hash

from extensions import per_app, redis_client

WINDOW_S = 15 * 60
MAX_FAILURES_PER_PAIR = 5  # one address guessing one account
MAX_FAILURES_PER_ADDRESS = 20  # one address guessing many accounts
MAX_FAILURES_PER_ACCOUNT = 100  # many addresses guessing one account


@functools.cache
def _dummy_hash() -> str:
    # Built on first use: hashing is slow on purpose, and importing does no work.
    return generate_password_hash("not-a-password-of-anyone")


def password_matches(stored_hash: str | None, password: str) -> bool:
    """Check a password against an account's hash; with no account (None), check it
    against a dummy hash, so an unknown email takes as long as a wrong password."""
    is_match = check_password_hash(stored_hash or _dummy_hash(), password[:1024])
    return stored_hash is not None and is_match


class Account(Protocol):
    password_hash: str


A = TypeVar("A", bound=Account)


def sign_in(
    scope: str, email: str, password: str, address: str, find: Callable[[str], A | None]
) -> A | None:
    """The account `find` returns for the email if the password matches, else None
    (unknown email or wrong password alike, in the same time: the password is checked
    either way). Raises TooManyAttemptsError before anything is checked."""
    reserve(scope, email, address)
    account = find(email.strip().lower())
    is_match = password_matches(account.password_hash if account else None, password)
    if account is None or not is_match:
        return None  # counted by the reservation
    record_success(scope, email, address)
    return account


class TooManyAttemptsError(Exception):
    """Too many failed logins for this account or from this address; try again later."""

    retry_after_s = WINDOW_S


def _keys(scope: str, email: str, address: str) -> dict[str, tuple[str, int]]:
    # Hashed: a key never carries an email address into Redis in clear text.
    account = hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]
    return {
        "pair": (f"login:{scope}:pair:{account}:{address}", MAX_FAILURES_PER_PAIR),
        "address": (f"login:{scope}:address:{address}", MAX_FAILURES_PER_ADDRESS),
        "account": (f"login:{scope}:account:{account}", MAX_FAILURES_PER_ACCOUNT),
    }


# Every attempt is counted as a failure before its password is checked, in one step
# with the check of the limits: 50 tries at once get at most the limit through (a check
# then a count let every one of them pass the check first). A refused attempt counts
# nothing, so a guesser at one address cannot run the account's counter up for others.
_RESERVE = """
for i, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') >= tonumber(ARGV[i + 1]) then return 0 end
end
for _, key in ipairs(KEYS) do
  redis.call('SET', key, 0, 'EX', ARGV[1], 'NX')
  redis.call('INCR', key)
end
return 1
"""
# A success clears its account's counters and gives back the address's reservation
# (an office's logins are not failures); a counter that expired meanwhile stays gone.
_SUCCEED = """
redis.call('DEL', KEYS[1], KEYS[3])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('DECR', KEYS[2]) end
return 1
"""


def reserve(scope: str, email: str, address: str) -> None:
    """Count this attempt as a failure, unless a counter is at its limit: then raise
    TooManyAttemptsError and count nothing. Without Redis there is no counting, so
    logins are refused."""
    keys = _keys(scope, email, address)
    try:
        is_reserved = _script(_RESERVE)(
            keys=[key for key, _ in keys.values()],
            args=[WINDOW_S, *(limit for _, limit in keys.values())],
        )
    except RedisError:
        raise TooManyAttemptsError() from None
    if not is_reserved:
        raise TooManyAttemptsError()


def record_success(scope: str, email: str, address: str) -> None:
    keys = _keys(scope, email, address)
    with suppress(RedisError):  # without Redis the counters expire on their own
        _script(_SUCCEED)(keys=[key for key, _ in keys.values()])


def _script(source: str) -> Any:
    # Registered once per app (its SHA computed once), as the breaker's scripts are.
    return per_app("login_scripts", source, lambda: redis_client.client.register_script(source))


SIGNUP_WINDOW_S = 3600
MAX_SIGNUPS_PER_ADDRESS = 10  # a family or an office, not a script making accounts


def count_signup(address: str) -> None:
    """Count a sign-up from this address; TooManyAttemptsError past the hour's limit (and
    without Redis, as logins: refused rather than unlimited)."""
    key = f"signup:address:{address}"
    try:
        pipe = redis_client.client.pipeline()
        pipe.set(key, 0, ex=SIGNUP_WINDOW_S, nx=True)
        pipe.incr(key)
        count = pipe.execute()[1]
    except RedisError:
        raise TooManyAttemptsError() from None
    if int(count) > MAX_SIGNUPS_PER_ADDRESS:
        raise TooManyAttemptsError()
