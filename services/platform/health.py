"""Readiness: do the database and Redis answer?"""

from __future__ import annotations

from redis.exceptions import RedisError
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from extensions import db, redis_client


def failing_dependencies() -> dict[str, str]:
    """The parts that do not answer, with the error's class name; empty when all do."""
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
    return failing
