"""The app's database role, made beside the owner: it logs in and can do nothing more
(no superuser, no CREATEDB, no CREATEROLE); making it again changes nothing but its
password; a name that is not a plain role name is refused."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.pool import NullPool

from devtools.db_roles import ensure_app_role


def test_the_role_logs_in_and_has_no_power(server_urls: dict[str, str]) -> None:
    owner = server_urls["database_owner"]
    url = ensure_app_role(owner, "payments_test_role", password="s3cret")
    assert make_url(url).username == "payments_test_role"
    assert make_url(url).password == "s3cret"
    assert ensure_app_role(owner, "payments_test_role", password="s3cret") == url  # again
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            powers = conn.execute(
                text(
                    "SELECT rolsuper, rolcreatedb, rolcreaterole, rolcanlogin FROM pg_roles "
                    "WHERE rolname = current_user"
                )
            ).one()
    finally:
        engine.dispose()
    assert tuple(powers) == (False, False, False, True)


def test_a_name_that_is_not_a_plain_role_is_refused(server_urls: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="not a role name"):
        ensure_app_role(server_urls["database_owner"], "x; DROP ROLE postgres")
