"""Admin sign-in: its own session key (never a customer's), hashed passwords, rate limits."""

from __future__ import annotations

from flask import session
from redis.exceptions import RedisError
from sqlalchemy import select
from werkzeug.security import check_password_hash

from extensions import db, redis_client
from models import AdminUser
from models.types import utcnow

SESSION_KEY = "admin_user_id"
MAX_ATTEMPTS_PER_ACCOUNT = 5  # per window, then the account is locked for the window
MAX_ATTEMPTS_PER_ADDRESS = 20
ATTEMPT_WINDOW_S = 15 * 60


class TooManyAttemptsError(Exception):
    """Login attempts over the limit for this account or address; try again later."""


def _count(key: str) -> int:
    pipe = redis_client.client.pipeline()
    pipe.set(key, 0, ex=ATTEMPT_WINDOW_S, nx=True)  # the window starts at the first attempt
    pipe.incr(key)
    return int(pipe.execute()[1])


def authenticate(email: str, password: str, address: str) -> AdminUser | None:
    """The admin whose credentials match, or None. Raises TooManyAttemptsError."""
    email = email.strip().lower()
    try:
        if (
            _count(f"admin-login:account:{email}") > MAX_ATTEMPTS_PER_ACCOUNT
            or _count(f"admin-login:address:{address}") > MAX_ATTEMPTS_PER_ADDRESS
        ):
            raise TooManyAttemptsError()
    except RedisError:
        # Without Redis there is no way to count attempts: refuse rather than allow
        # unlimited guessing.
        raise TooManyAttemptsError() from None
    admin = db.session.scalar(select(AdminUser).where(AdminUser.email == email))
    if admin is None or not check_password_hash(admin.password_hash, password):
        return None
    redis_client.client.delete(f"admin-login:account:{email}")
    return admin


def log_in(admin: AdminUser) -> None:
    session.clear()  # no customer identity or stale state rides along
    session[SESSION_KEY] = admin.id
    admin.last_login_at = utcnow()
    db.session.commit()


def log_out() -> None:
    session.pop(SESSION_KEY, None)


def current_admin() -> AdminUser | None:
    admin_id = session.get(SESSION_KEY)
    if not isinstance(admin_id, int):
        return None
    return db.session.get(AdminUser, admin_id)
