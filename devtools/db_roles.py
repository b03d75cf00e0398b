"""The app's database role beside the owner's (models/privileges.py says what it may do):
made by the owner on a cluster of ours (`make run`'s, the tests'), where the owner may
create roles. In production the database's administrator makes it (docs/books.md)."""

from __future__ import annotations

from sqlalchemy import create_engine, make_url, text
from sqlalchemy.pool import NullPool

from dev_defaults import APP_ROLE
from models.privileges import ROLE_NAME


def ensure_app_role(owner_url: str, role: str = APP_ROLE, password: str | None = None) -> str:
    """Make the role (LOGIN, nothing else: no superuser, no CREATEDB, no CREATEROLE)
    unless it exists, give it `password` when one is given; the app's URL: the owner's
    with this role."""
    if not ROLE_NAME.match(role):
        raise ValueError(f"not a role name: {role!r}")
    engine = create_engine(owner_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            exists = conn.execute(
                text("SELECT 1 FROM pg_roles WHERE rolname = :role"), {"role": role}
            ).scalar()
            if not exists:
                conn.execute(text(f"CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE"))
            if password is not None:
                quoted = conn.execute(text("SELECT quote_literal(:p)"), {"p": password}).scalar()
                conn.execute(text(f"ALTER ROLE {role} PASSWORD {quoted}"))
    finally:
        engine.dispose()
    url = make_url(owner_url).set(username=role, password=password)
    return url.render_as_string(hide_password=False)
