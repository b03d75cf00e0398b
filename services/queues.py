"""Queue names and enqueueing. One queue per provider: a slow provider fills only its own."""

from __future__ import annotations

from rq import Queue

from config import JOB_TIMEOUT_S
from extensions import redis_client

__all__ = ["JOB_TIMEOUT_S", "MAINTENANCE_QUEUE", "maintenance_queue", "provider_queue"]

QUEUE_PREFIX = "payments-"
MAINTENANCE_QUEUE = "maintenance"  # sweeps and other periodic jobs that call no provider


def provider_queue_name(provider: str) -> str:
    """The queue of one provider's jobs; matches the supervisor program exactly."""
    return f"{QUEUE_PREFIX}{provider}"


def provider_queue(provider: str) -> Queue:
    return Queue(
        provider_queue_name(provider), connection=redis_client.client, default_timeout=JOB_TIMEOUT_S
    )


def named_queue(name: str) -> Queue:
    """Any other queue by name (the notifications bulkhead)."""
    return Queue(name, connection=redis_client.client, default_timeout=JOB_TIMEOUT_S)


def maintenance_queue() -> Queue:
    return Queue(MAINTENANCE_QUEUE, connection=redis_client.client, default_timeout=JOB_TIMEOUT_S)
