"""The application factory: reads like a table of contents of the web process."""

from __future__ import annotations

import sys
from typing import Any

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.routing import IntegerConverter

import logs
from config import INSTANCE_DIR, ConfigError, settings_from_env
from extensions import babel, csrf, db, login_manager, migrate, redis_client
from models import OrderStatus, PaymentStatus, WebhookState
from models.types import MAX_ROW_ID
from resilience.db_ping import ping_when_idle
from services.accounts.customers import load_session_user
from services.platform import metrics
from services.platform.locales import LANGUAGE_NAMES, current_locale, datetime_text, money_text
from settings import bind_settings


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Build the Flask app from the environment, with `config` overriding it (tests)."""
    app = Flask(__name__, instance_path=str(INSTANCE_DIR))
    try:
        app.config.from_mapping(settings_from_env())
    except ConfigError as exc:
        # One line naming the variable instead of a traceback. Exit status 3 is
        # gunicorn's "worker failed to boot": its arbiter stops instead of respawning.
        print(f"configuration error: {exc}", file=sys.stderr)
        raise SystemExit(3) from None
    if config:
        app.config.update(config)
    bind_settings(app)
    trust_proxies(app)
    app.url_map.converters["id"] = RowIdConverter
    register_extensions(app)
    metrics.track_in_flight(app)
    register_blueprints(app)
    register_template_helpers(app)
    register_commands(app)
    configure_logging(app)
    return app


def trust_proxies(app: Flask) -> None:
    """Behind TRUSTED_PROXIES balancers, the client's address and scheme are the ones the
    nearest of them saw (docs/scaling.md); by default nobody's forwarded headers count."""
    count = app.config.get("TRUSTED_PROXIES", 0)
    if count:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=count, x_proto=count)  # type: ignore[method-assign]  # the WSGI app is replaced on purpose (ProxyFix)


class RowIdConverter(IntegerConverter):
    """`<id:...>` in a route: a row id, ASCII digits, 1 to MAX_ROW_ID. A larger number is
    no row of ours, so it answers 404 instead of reaching the database (integer out of
    range); so do other scripts' digits (`\\d` and `int()` read Arabic-Indic or
    full-width digits as numbers: two texts would name one row)."""

    regex = "[0-9]+"

    def __init__(self, url_map: Any) -> None:
        super().__init__(url_map, min=1, max=MAX_ROW_ID)


def register_extensions(app: Flask) -> None:
    import models  # noqa: F401  (registers every model on the metadata)

    db.init_app(app)
    with app.app_context():
        ping_when_idle(db.engine)
    migrate.init_app(
        app,
        db,
        directory=str(app.root_path + "/migrations"),
        compare_type=True,
    )
    csrf.init_app(app)
    login_manager.init_app(app)
    login_manager.login_view = "auth.login"
    login_manager.user_loader(load_session_user)
    redis_client.init_app(app)
    from blueprints.language import select_locale

    # Pages, emails and messages in the customer's language (translations/<locale>/).
    babel.init_app(app, locale_selector=select_locale, default_domain="messages")


def register_blueprints(app: Flask) -> None:
    from blueprints import (
        admin,
        api,
        auth,
        checkout,
        errors,
        guards,
        headers,
        health,
        language,
        sessions,
        shop,
        wallet,
        webhooks,
    )

    app.register_blueprint(health.bp)
    app.register_blueprint(auth.bp)
    app.register_blueprint(shop.bp)
    app.register_blueprint(checkout.bp)
    app.register_blueprint(wallet.bp)
    app.register_blueprint(language.bp)
    app.register_blueprint(api.bp)
    app.register_blueprint(webhooks.bp)
    admin.register(app)
    guards.register(app)
    errors.register(app)
    headers.register(app)
    sessions.register(app)


def register_template_helpers(app: Flask) -> None:
    # Every amount a page or email shows, in the reader's locale (services/platform/locales.py).
    app.jinja_env.filters["money"] = money_text
    app.jinja_env.filters["datetime_text"] = datetime_text
    app.jinja_env.globals.update(current_locale=current_locale, LANGUAGE_NAMES=LANGUAGE_NAMES)
    # State names come from their enums in templates too (never a second list of strings).
    app.jinja_env.globals.update(
        PaymentStatus=PaymentStatus, OrderStatus=OrderStatus, WebhookState=WebhookState
    )


def register_commands(app: Flask) -> None:
    from commands import books, payments, seed, users, wallet, workers

    app.cli.add_command(seed.seed_command)
    app.cli.add_command(users.customers_cli)
    app.cli.add_command(users.admin_cli)
    app.cli.add_command(workers.worker_command)
    app.cli.add_command(workers.scheduler_command)
    app.cli.add_command(wallet.wallet_cli)
    app.cli.add_command(payments.payments_cli)
    app.cli.add_command(books.books_cli)


def configure_logging(app: Flask) -> None:
    if not app.testing:
        logs.configure()
