"""Security headers on every response: a strict Content-Security-Policy (no inline
script: Flask-Admin's own tags carry a per-request nonce), no framing, no sniffing."""

from __future__ import annotations

import secrets

from flask import Flask, Response, g

from services.payments.cards import card_entry_sources
from settings import settings

# Scripts and styles from this site only (and nonce-marked tags, which Flask-Admin
# renders); nothing may frame a page (clickjacking); forms post back to this site.
# The card entry's script, frames and API calls (Stripe.js and Stripe's API, or the
# sandbox's stand-ins) are allowed by origin, exactly those (services/payments/cards.py).
CSP = (
    "default-src 'self'; script-src 'self' 'nonce-{nonce}'{script}; "
    "style-src 'self' 'nonce-{nonce}'; connect-src 'self'{connect}; frame-src 'self'{frame}; "
    "img-src 'self' data:; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "strict-origin-when-cross-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def csp_nonce() -> str:
    """This request's nonce for the script and style tags that must carry one."""
    if "csp_nonce" not in g:
        g.csp_nonce = secrets.token_urlsafe(16)
    return str(g.csp_nonce)


def register(app: Flask) -> None:
    is_production = settings(app).is_production
    with app.app_context():
        sources = {kind: f" {origin}" for kind, origin in card_entry_sources().items()}
    extra = {kind: sources.get(kind, "") for kind in ("script", "connect", "frame")}

    @app.after_request
    def add_security_headers(response: Response) -> Response:
        response.headers.setdefault(
            "Content-Security-Policy", CSP.format(nonce=csp_nonce(), **extra)
        )
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        if is_production:
            response.headers.setdefault(
                "Strict-Transport-Security", "max-age=31536000; includeSubDomains"
            )
        return response
