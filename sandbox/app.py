"""The sandbox's Flask app: the provider dialects plus the /_sandbox control API."""

from __future__ import annotations

from flask import Flask, Response

from sandbox.context import ConnectionDropped, SandboxConfig
from sandbox.store import Store


def create_app(config: SandboxConfig) -> Flask:
    from sandbox import control_api
    from sandbox.braintree import cards as braintree_cards
    from sandbox.braintree import changes as _braintree_changes  # noqa: F401 (its routes)
    from sandbox.braintree import disputes as _braintree_disputes  # noqa: F401 (its routes)
    from sandbox.braintree import gateway as braintree_gateway
    from sandbox.braintree import reports as braintree_reports
    from sandbox.stripe import api as stripe_api
    from sandbox.stripe import (  # noqa: F401 (routes on stripe_api.bp)
        balance_api,
        customers,
        disputes,
        refunds,
    )
    from sandbox.stripe import cards as stripe_cards
    from sandbox.stripe import three_ds as stripe_3ds

    app = Flask(__name__)
    app.config["SANDBOX"] = config
    app.extensions["sandbox_store"] = Store(config.db_path)
    app.register_blueprint(stripe_cards.bp)  # before /v1's secret-key check: Stripe.js's routes
    app.register_blueprint(stripe_3ds.bp)  # the bank's page: no API key, the client secret
    app.register_blueprint(stripe_api.bp)
    app.register_blueprint(braintree_cards.client_bp)  # before the gateway's key check
    app.register_blueprint(braintree_gateway.bp)  # /merchants/<id>/..., as Braintree's
    app.register_blueprint(braintree_reports.bp)  # its GraphQL API's fee report
    app.register_blueprint(control_api.bp, url_prefix="/_sandbox")
    stripe_api.register_errors(app)
    app.register_error_handler(ConnectionDropped, lambda exc: Response(status=499))
    return app
