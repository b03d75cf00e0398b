"""The Stripe dialect's one blueprint (`/v1`): every Stripe module adds its routes to it,
and none imports another's module for it (no import circles)."""

from __future__ import annotations

from flask import Blueprint

bp = Blueprint("stripe", __name__)
