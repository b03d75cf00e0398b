"""Liveness and readiness probes for load balancers and supervisors."""

from __future__ import annotations

import hmac

from flask import Blueprint, Response, abort, jsonify, request
from flask.typing import ResponseReturnValue
from prometheus_client import CONTENT_TYPE_LATEST

from extensions import db
from services.backoffice import dashboard
from services.platform import metrics
from services.platform.health import failing_dependencies
from settings import settings

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    """The process is alive and serving; checks nothing else on purpose."""
    return jsonify(status="ok")


@bp.get("/readyz")
def readyz() -> ResponseReturnValue:
    """200 when the database and Redis answer; 503 naming each part that does not."""
    failing = failing_dependencies()
    if failing:
        return jsonify(status="unavailable", failing=failing), 503
    return jsonify(status="ready")


@bp.get("/metrics")
def metrics_endpoint() -> ResponseReturnValue:
    """Prometheus text format, for the scraper only: behind METRICS_TOKEN when it is set;
    in production without a token not served at all (404)."""
    token = settings().metrics_token
    if token:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), token.encode()):
            return jsonify(error={"code": "unauthorized", "message": "metrics need a token"}), 401
    elif settings().is_production:
        abort(404)

    body = metrics.render(dashboard.live_state)
    db.session.rollback()
    return Response(body, mimetype=CONTENT_TYPE_LATEST)
