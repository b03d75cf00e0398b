"""Failover: a payment that was never sent may move to the fallback provider while its
own provider's circuit is open (PAYMENTS_FAILOVER_PROVIDER)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from redis.exceptions import RedisError

from models import Payment, TransitionSource
from providers.registry import spec_for
from services.movements import lifecycle
from services.movements.kinds import Kind
from services.payments.state import note
from services.platform.provider_clients import breaker_for
from settings import settings

log = logging.getLogger(__name__)


def reroute(kind: Kind, payment: Payment) -> Callable[[], object] | None:
    """Fail over a payment that was NEVER sent to the configured fallback provider.

    A payment that was ever sent (or may have been) stays with its provider: only
    that provider can tell what happened to it.
    """
    fallback = settings().payments.failover_provider
    if (
        not fallback
        or fallback == payment.provider
        or payment.first_sent_at is not None
        or payment.send_count
    ):
        return None
    if not _is_closed(fallback) or not spec_for(fallback).accepts_payment_method(
        payment.payment_method
    ):
        # A card token is the provider's own: another provider cannot charge it.
        return None
    primary, payment.provider = payment.provider, fallback
    note(
        payment,
        source=TransitionSource.CHARGE,
        reason=f"rerouted from {primary} to {fallback}: {primary}'s circuit is open and "
        "the payment was never sent",
    )
    log.warning(
        "payment %s (key %s) rerouted from %s to %s",
        payment.id,
        payment.idempotency_key,
        primary,
        fallback,
    )
    payment_id = payment.id
    job_id = kind.send_job_id(payment_id, f"-{fallback}")
    return lambda: lifecycle.enqueue_send(kind, fallback, payment_id, job_id=job_id)


def _is_closed(provider: str) -> bool:
    """Is this provider's circuit closed? (Read only: no probe is taken here.)"""
    try:
        return breaker_for(provider).snapshot()["state"] in ("closed", "forced_closed")
    except RedisError:
        return False
