"""Liveness and readiness probes for load balancers and supervisors."""

from __future__ import annotations

from flask import Blueprint, Response, jsonify
from flask.typing import ResponseReturnValue
from prometheus_client import CONTENT_TYPE_LATEST
from redis.exceptions import RedisError
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from extensions import db, redis_client
from services import dashboard, metrics

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> ResponseReturnValue:
    """The process is alive and serving; checks nothing else on purpose."""
    return jsonify(status="ok")


@bp.get("/readyz")
def readyz() -> ResponseReturnValue:
    """200 when the database and Redis answer; 503 naming each part that does not."""
    failing: dict[str, str] = {}
    try:
        db.session.execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        failing["database"] = type(exc).__name__
    finally:
        db.session.rollback()
    try:
        redis_client.client.ping()
    except RedisError as exc:
        failing["redis"] = type(exc).__name__
    if failing:
        return jsonify(status="unavailable", failing=failing), 503
    return jsonify(status="ready")


@bp.get("/metrics")
def metrics_endpoint() -> ResponseReturnValue:
    """Prometheus text format. Meant for the internal network: expose it to the scraper only."""

    def live_state() -> tuple[dict[str, int], list[dict[str, object]]]:
        breakers = [b for b in dashboard.breakers() if "error" not in b]
        return dashboard.payment_counts_by_status(), breakers

    body = metrics.render(live_state)
    db.session.rollback()
    return Response(body, mimetype=CONTENT_TYPE_LATEST)
