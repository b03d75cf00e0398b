"""One client per provider per process, built from the app's configuration."""

from __future__ import annotations

from flask import current_app

from extensions import redis_client
from providers.base import Provider
from providers.registry import build_provider
from resilience.breaker import BreakerConfig, CircuitBreaker
from resilience.gateway import Gateway
from services.platform import call_log
from settings import settings


def provider_for(name: str) -> Provider:
    """The client of provider `name` (cached on the app: sessions keep their pools)."""
    clients: dict[str, Provider] = current_app.extensions.setdefault("provider_clients", {})
    if name not in clients:
        clients[name] = build_provider(name, current_app.config, settings().http)
    return clients[name]


def breaker_for(name: str) -> CircuitBreaker:
    """The shared breaker of provider `name` (its state lives in Redis)."""
    breakers: dict[str, CircuitBreaker] = current_app.extensions.setdefault("breakers", {})
    if name not in breakers:
        # Every guarded name has its own settings (config.py): never another's.
        config: BreakerConfig = settings().breakers[name]
        breakers[name] = CircuitBreaker(redis_client.client, name, config)
    return breakers[name]


def gateway_for(name: str) -> Gateway:
    """The guarded path of every request to provider `name` (resilience/gateway.py)."""
    gateways: dict[str, Gateway] = current_app.extensions.setdefault("gateways", {})
    if name not in gateways:
        gateways[name] = Gateway(name, breaker_for(name), call_log.write)
    return gateways[name]
