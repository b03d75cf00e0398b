"""The bank's 3-D Secure challenge, as Stripe's test mode shows it: the page behind
next_action.redirect_to_url, with "Complete authentication" and "Fail authentication",
then back to the merchant's return_url with Stripe's query parameters."""

from __future__ import annotations

import hmac
import json
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from babel.numbers import format_currency, get_currency_precision
from flask import Blueprint, Response, abort, g, redirect, render_template_string, request

from sandbox.context import store
from sandbox.stripe.charges import authenticate
from sandbox.stripe.objects import new_id

bp = Blueprint("stripe_3ds", __name__)

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>3D Secure 2 Test Page</title></head>
<body>
<h1>3D Secure 2 Test Page</h1>
<p>This is a test payment of {{ amount }}. Complete or fail the
authentication; in live mode the customer's bank shows its own page here.</p>
{% for action, label in (("complete", "Complete authentication"),
                         ("fail", "Fail authentication")) %}
<form method="post">
  <input type="hidden" name="client_secret" value="{{ client_secret }}">
  <input type="hidden" name="action" value="{{ action }}">
  <button type="submit" id="{{ action }}-authentication">{{ label }}</button>
</form>
{% endfor %}
</body></html>"""


def _load(intent_id: str, client_secret: str) -> dict[str, Any] | None:
    """The intent, if the client secret is its own (nobody else answers its challenge)."""
    rows = store().query("SELECT body FROM payment_intents WHERE id = ?", (intent_id,))
    if not rows:
        return None
    intent: dict[str, Any] = json.loads(rows[0]["body"])
    if not hmac.compare_digest(str(intent.get("client_secret")), client_secret):
        return None
    return intent


@bp.get("/3d_secure/authenticate/<intent_id>")
def challenge(intent_id: str) -> str:
    intent = _load(intent_id, request.args.get("client_secret", ""))
    if intent is None:
        abort(404)
    currency = intent["currency"].upper()
    # Stripe's amounts are minor units of the currency: a person reads major ones.
    major = Decimal(intent["amount"]).scaleb(-get_currency_precision(currency))
    return render_template_string(
        PAGE,
        amount=format_currency(major, currency, locale="en"),
        client_secret=intent["client_secret"],
    )


@bp.post("/3d_secure/authenticate/<intent_id>")
def answer(intent_id: str) -> Response:
    client_secret = request.form.get("client_secret", "")
    action = request.form.get("action")
    if _load(intent_id, client_secret) is None or action not in ("complete", "fail"):
        abort(404)
    g.stripe_request_id = new_id("req")
    answered = Response("This authentication was answered already.", mimetype="text/plain")
    with store().transaction() as conn:
        row = conn.execute("SELECT body FROM payment_intents WHERE id = ?", (intent_id,)).fetchone()
        intent = json.loads(row["body"])
        return_url = _return_url(intent)
        if not return_url:
            return answered
        authenticate(conn, intent, is_completed=action == "complete")
    status = "succeeded" if intent["status"] == "succeeded" else "failed"
    query = urlencode(
        {
            "payment_intent": intent_id,
            "payment_intent_client_secret": client_secret,
            "redirect_status": status,
        }
    )
    separator = "&" if "?" in return_url else "?"
    return redirect(f"{return_url}{separator}{query}", code=303)  # type: ignore[return-value]  # Flask's redirect is typed as werkzeug's Response


def _return_url(intent: dict[str, Any]) -> str:
    """Where the confirmation said to send the customer back (empty once answered)."""
    action = intent.get("next_action") or {}
    return str((action.get("redirect_to_url") or {}).get("return_url") or "")
