"""One client per provider per process, built from the app's configuration."""

from __future__ import annotations

import hashlib
import logging

from flask import current_app
from redis.exceptions import RedisError

from extensions import per_app, redis_client
from providers.base import Provider
from providers.registry import build_provider
from resilience.breaker import CircuitBreaker
from resilience.gateway import Gateway
from services.platform import call_log, job_paths, queues
from settings import settings

log = logging.getLogger(__name__)


def provider_for(name: str) -> Provider:
    """The client of provider `name` (cached on the app: sessions keep their pools)."""
    return per_app(
        "provider_clients", name, lambda: build_provider(name, current_app.config, settings().http)
    )


def breaker_for(name: str) -> CircuitBreaker:
    """The shared breaker of provider `name` (its state lives in Redis)."""
    # Every guarded name has its own settings (config.py): never another's.
    return per_app(
        "breakers",
        name,
        lambda: CircuitBreaker(redis_client.client, name, settings().breakers[name]),
    )


def gateway_for(name: str) -> Gateway:
    """The guarded path of every request to provider `name` (resilience/gateway.py)."""
    return per_app(
        "gateways", name, lambda: Gateway(name, breaker_for(name), call_log.write, alarm=alarm)
    )


def alarm(kind: str, dedupe_key: str, detail: str) -> None:
    """Raise an ops alert at once, from a provider worker: a job on the maintenance
    queue writes it (the alert is UNIQUE by its key: every process may hand it on)."""
    job_id = "alert-" + hashlib.sha256(dedupe_key.encode()).hexdigest()[:24]
    try:
        queues.maintenance_queue().enqueue(
            job_paths.RAISE_ALERT, kind, dedupe_key, detail, job_id=job_id
        )
    except RedisError as exc:  # the periodic check still sees a refused key
        log.warning("alert %s not queued: %s", dedupe_key, exc)
