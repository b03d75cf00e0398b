"""Admin sign-in: its own session key (never a customer's), hashed passwords, rate limits."""

from __future__ import annotations

import functools
import logging
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from flask import session
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from werkzeug.security import generate_password_hash

from extensions import db
from models import AdminRole, AdminUser
from models.types import utcnow
from services.accounts import login_throttle
from services.accounts.login_throttle import TooManyAttemptsError
from services.platform.errors import ClientError

log = logging.getLogger(__name__)

SESSION_KEY = "admin_user_id"
SESSION_VERSION_KEY = "admin_session_version"

__all__ = [
    "AdminExistsError",
    "TooManyAttemptsError",
    "authenticate",
    "create_admin",
    "current_admin",
    "log_in",
    "log_out",
]


def authenticate(email: str, password: str, address: str) -> AdminUser | None:
    """The admin whose credentials match, or None. Raises TooManyAttemptsError
    (services/accounts/login_throttle.py: failures per account and address, never successes)."""
    return login_throttle.sign_in(
        "admin",
        email,
        password,
        address,
        lambda normalized: db.session.scalar(
            select(AdminUser).where(AdminUser.email == normalized)
        ),
    )


class AdminExistsError(ValueError):
    """An administrator with this email exists; nothing was written."""


# What each role may do (pages are read by every role); checked on the server for every
# action (blueprints/admin/base.py), recorded with who and why by the action itself.
OPERATE, REFUND, CATALOG, USERS = "operate", "refund", "catalog", "users"
PERMISSIONS: dict[AdminRole, frozenset[str]] = {
    AdminRole.VIEWER: frozenset(),
    AdminRole.OPERATOR: frozenset({OPERATE}),
    AdminRole.REFUNDER: frozenset({REFUND}),
    AdminRole.ADMIN: frozenset({OPERATE, REFUND, CATALOG, USERS}),
}


def can(admin: AdminUser | None, permission: str) -> bool:
    return admin is not None and permission in PERMISSIONS[admin.role]


def zone_of(admin: AdminUser | None) -> ZoneInfo:
    """The time zone the admin reads the console in (UTC for none, or a name that no
    longer exists)."""
    try:
        return ZoneInfo(admin.time_zone if admin is not None else "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return ZoneInfo("UTC")


def common_zones() -> list[str]:
    """Every zone name a person may choose, sorted (the form's suggestions)."""
    return sorted(_zones())


@functools.cache
def _zones() -> frozenset[str]:
    return frozenset(available_timezones() | {"UTC"})


def set_time_zone(admin: AdminUser, name: str) -> str:
    """Read the console's times in this IANA zone ("Europe/Rome"). Commits; raises
    ClientError for a name that is not a zone."""
    cleaned = name.strip()
    if cleaned not in _zones():
        raise ClientError(f"no time zone {cleaned[:64]!r} (e.g. Europe/Rome)", code="invalid_zone")
    admin.time_zone = cleaned
    db.session.commit()
    return f"times are shown in {cleaned}"


def roles_with(permission: str) -> list[str]:
    """The roles that have `permission` ("refunder, admin"): what a refusal names."""
    return [role.value for role, granted in PERMISSIONS.items() if permission in granted]


def create_admin(email: str, password: str, role: AdminRole = AdminRole.ADMIN) -> AdminUser:
    """Create a dashboard user with a role (email already normalized). Commits."""
    admin = AdminUser(email=email, password_hash=generate_password_hash(password), role=role)
    db.session.add(admin)
    try:
        db.session.commit()
    except IntegrityError:
        db.session.rollback()
        raise AdminExistsError(email) from None
    return admin


class NoSuchAdminError(LookupError):
    """No administrator has this email; nothing was written."""


def set_password(email: str, password: str) -> AdminUser:
    """Give an administrator (email already normalized) a new password and end every
    session of theirs (a forgotten password may be a stolen one). Commits."""
    admin = db.session.scalar(select(AdminUser).where(AdminUser.email == email).with_for_update())
    if admin is None:
        db.session.rollback()
        raise NoSuchAdminError(email)
    admin.password_hash = generate_password_hash(password)
    admin.session_version += 1
    db.session.commit()
    return admin


def log_in(admin: AdminUser) -> None:
    session.clear()  # no customer identity or stale state rides along
    session[SESSION_KEY] = admin.id
    session[SESSION_VERSION_KEY] = admin.session_version
    admin.last_login_at = utcnow()
    db.session.commit()


def log_out() -> None:
    """End this admin's sessions everywhere: a replayed copy of the cookie is refused."""
    admin = current_admin()
    if admin is not None:
        admin.session_version += 1
        db.session.commit()
    session.pop(SESSION_KEY, None)
    session.pop(SESSION_VERSION_KEY, None)


def current_admin() -> AdminUser | None:
    admin_id, version = session.get(SESSION_KEY), session.get(SESSION_VERSION_KEY)
    if not isinstance(admin_id, int) or not isinstance(version, int):
        return None
    admin = db.session.get(AdminUser, admin_id)
    if admin is None or admin.session_version != version:
        return None
    return admin


def all_admins() -> list[AdminUser]:
    return list(db.session.scalars(select(AdminUser).order_by(AdminUser.email)))


def set_role(admin_id: int, role: str, reason: str, actor: AdminUser) -> str:
    """Give a dashboard user another role, with a reason; the last admin keeps theirs
    (someone must be able to give roles). Logged with who and why. Commits; raises
    ClientError (nothing written)."""
    try:
        new = AdminRole(role)
    except ValueError:
        raise ClientError(f"no role {role[:20]!r}", code="invalid_role") from None
    if len(reason.strip()) < 5:
        raise ClientError("give the reason (5 characters at least)", code="reason_required")
    # Every admin's row first, in id order (two admins demoting each other at once: the
    # second waits, then reads one admin left), then the target's.
    admins_left = len(
        db.session.scalars(
            select(AdminUser.id)
            .where(AdminUser.role == AdminRole.ADMIN)
            .order_by(AdminUser.id)
            .with_for_update()
        ).all()
    )
    target = db.session.scalar(select(AdminUser).where(AdminUser.id == admin_id).with_for_update())
    if target is None:
        db.session.rollback()
        raise ClientError(f"no dashboard user {admin_id}", code="admin_not_found", status=404)
    if target.role == AdminRole.ADMIN and new != AdminRole.ADMIN and admins_left <= 1:
        db.session.rollback()
        raise ClientError("the last admin keeps the admin role", code="last_admin", status=409)
    was, target.role = target.role, new
    db.session.commit()
    log.info(
        "admin %s: role %s -> %s by %s: %s", target.email, was.value, new.value, actor.email, reason
    )
    return f"{target.email} is {new.value} (was {was.value})"
