"""POST /webhooks/<provider>: verification first, nothing written before it."""

from __future__ import annotations

import logging

from flask import Blueprint, jsonify, request
from flask.typing import ResponseReturnValue
from sqlalchemy.exc import DBAPIError, IntegrityError

from extensions import csrf, db
from providers.events import WebhookError
from services.platform import metrics
from services.platform.autocommit import ConnectionLost
from services.webhooks.events import UnknownProviderError, receive, record_duplicate
from settings import settings

bp = Blueprint("webhooks", __name__, url_prefix="/webhooks")
csrf.exempt(bp)  # authenticated by the provider's signature, not by a session
log = logging.getLogger(__name__)


def _error(status: int, code: str, message: str) -> ResponseReturnValue:
    return jsonify(error={"code": code, "message": message}), status


@bp.post("/<provider>")
def receive_webhook(provider: str) -> ResponseReturnValue:
    limit = settings().webhooks.max_body_bytes
    if request.content_length is not None and request.content_length > limit:
        return _error(413, "body_too_large", f"webhook bodies are limited to {limit} bytes")
    # A chunked body has no Content-Length: read at most one byte past the limit, never
    # the whole stream, and refuse it if that byte came.
    body = request.stream.read(limit + 1)
    if len(body) > limit:
        return _error(413, "body_too_large", f"webhook bodies are limited to {limit} bytes")
    try:
        state = receive(provider, {k.lower(): v for k, v in request.headers.items()}, body)
    except UnknownProviderError:
        metrics.WEBHOOK_EVENTS.labels("unknown", "rejected").inc()
        return _error(404, "unknown_provider", f"no webhook endpoint for {provider!r}")
    except WebhookError as exc:
        db.session.rollback()
        metrics.WEBHOOK_EVENTS.labels(provider, "rejected").inc()
        return _error(400, "invalid_webhook", str(exc))
    except IntegrityError:
        raise  # a bug, not a transient failure: let it be seen
    except (DBAPIError, ConnectionLost) as exc:
        # The database is unreachable or failed over: ask the provider to redeliver.
        db.session.rollback()
        cause = exc.orig if isinstance(exc, DBAPIError) else exc.__cause__
        log.warning(
            "webhook from %s not recorded (database: %s); asking for redelivery",
            provider,
            type(cause).__name__,
        )
        return _error(503, "temporarily_unavailable", "try again later")
    metrics.WEBHOOK_EVENTS.labels(provider, state).inc()
    if state == "duplicate":
        record_duplicate(provider)
    return jsonify(status=state)
