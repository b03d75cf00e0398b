"""One client per provider per process, built from the app's configuration."""

from __future__ import annotations

from flask import current_app

from providers.base import Provider
from providers.registry import build_provider


def provider_for(name: str) -> Provider:
    """The client of provider `name` (cached on the app: sessions keep their pools)."""
    clients: dict[str, Provider] = current_app.extensions.setdefault("provider_clients", {})
    if name not in clients:
        clients[name] = build_provider(name, current_app.config)
    return clients[name]
