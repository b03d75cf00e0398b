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
HSTS = "max-age=31536000; includeSubDomains"
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
        sources = {
            kind: "".join(f" {origin}" for origin in origins)
            for kind, origins in card_entry_sources().items()
        }
    extra = {kind: sources.get(kind, "") for kind in ("script", "connect", "frame")}

    fixed = {**HEADERS, **({"Strict-Transport-Security": HSTS} if is_production else {})}
    csp_around_nonce = CSP.format(nonce="\0", **extra).split("\0")  # filled per response

    @app.after_request
    def add_security_headers(response: Response) -> Response:
        # Each header unless the view set its own: the names present read once, the rest
        # added in one go (werkzeug's setdefault scans the headers once per name).
        present = {name.lower() for name, _ in response.headers}
        missing = [(name, value) for name, value in fixed.items() if name.lower() not in present]
        if "content-security-policy" not in present:
            missing.append(("Content-Security-Policy", csp_nonce().join(csp_around_nonce)))
        response.headers.extend(missing)
        return response
