"""Login throttling for customers and admins: failed attempts counted in Redis.

Three counters per failed attempt, each for a 15-minute window that starts at the
first failure: the (account, address) pair, the address, and the account from any
address. The pair's limit is small, so a guesser at one address stops quickly; the
account's limit is much larger, so someone else's typing cannot lock the real
person out after a handful of tries, while a guesser spread over many addresses is
still bounded. Only failures count; a successful login clears its account's counters.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from contextlib import suppress
from typing import Protocol, TypeVar

from redis.exceptions import RedisError
from werkzeug.security import check_password_hash, generate_password_hash

from extensions import redis_client

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
    check(scope, email, address)
    account = find(email.strip().lower())
    is_match = password_matches(account.password_hash if account else None, password)
    if account is None or not is_match:
        record_failure(scope, email, address)
        return None
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


def check(scope: str, email: str, address: str) -> None:
    """Raise TooManyAttemptsError when any counter is at its limit (before the password
    is checked). Without Redis there is no counting, so logins are refused."""
    keys = _keys(scope, email, address)
    try:
        counts = redis_client.client.mget([key for key, _ in keys.values()])
    except RedisError:
        raise TooManyAttemptsError() from None
    for (_, limit), count in zip(keys.values(), counts, strict=True):
        if count is not None and int(count) >= limit:
            raise TooManyAttemptsError()


def record_failure(scope: str, email: str, address: str) -> None:
    with suppress(RedisError):  # the next check() refuses while Redis is down
        pipe = redis_client.client.pipeline()
        for key, _ in _keys(scope, email, address).values():
            pipe.set(key, 0, ex=WINDOW_S, nx=True)  # the window starts at the first failure
            pipe.incr(key)
        pipe.execute()


def record_success(scope: str, email: str, address: str) -> None:
    keys = _keys(scope, email, address)
    with suppress(RedisError):  # without Redis the counters expire on their own
        redis_client.client.delete(keys["pair"][0], keys["account"][0])


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
