"""The integration that caused the incident in DESIGN.md. It lives only in the drill.

Synchronous provider call inside the web request, a long timeout, and a blind
retry of the charge after a timeout (no idempotency key).
"""

from __future__ import annotations

import os

import requests
from flask import Flask, jsonify
from flask.typing import ResponseReturnValue

from services.platform.metrics import render, track_in_flight

app = Flask(__name__)
track_in_flight(app)  # measurement only, the same gauge as the real app's
PROVIDER = os.environ.get("NAIVE_PROVIDER_URL", "http://127.0.0.1:8099")
TIMEOUT_S = float(os.environ.get("NAIVE_TIMEOUT_S", "30"))  # "the default"


@app.get("/")
def home() -> str:
    return "<h1>Catalog</h1>" + "".join(f"<p>Product {i}</p>" for i in range(20))


@app.get("/metrics")
def metrics() -> ResponseReturnValue:
    return render(None), 200, {"Content-Type": "text/plain; version=0.0.4"}


@app.post("/pay/<int:payment_ref>")
def pay(payment_ref: int) -> ResponseReturnValue:
    form = {
        "amount": "1000",
        "currency": "eur",
        "confirm": "true",
        "automatic_payment_methods[enabled]": "true",
        "automatic_payment_methods[allow_redirects]": "never",
        "payment_method": "pm_card_visa",
        "metadata[payment_id]": f"naive-{payment_ref}",
        "metadata[order_id]": f"naive-{payment_ref}",
    }
    for _ in range(2):  # "try again if it timed out"
        try:
            response = requests.post(
                f"{PROVIDER}/v1/payment_intents",
                data=form,
                headers={"Authorization": "Bearer sk_test_sandbox"},
                timeout=TIMEOUT_S,
            )
            return jsonify(status=response.status_code)
        except requests.RequestException:
            continue
    return jsonify(status="failed"), 502
