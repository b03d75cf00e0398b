"""This app with one extra route that authenticates the bearer token and enqueues, and
writes nothing: the ceiling for any intake that must authenticate each request.

bench/intake.py serves it next to the real endpoint and the minimal one.
"""

from __future__ import annotations

from flask import g, jsonify
from flask.typing import ResponseReturnValue

from app import create_app
from blueprints.api import token_required
from extensions import csrf
from services.platform.queues import provider_queue

app = create_app()


@token_required
def auth_and_enqueue() -> ResponseReturnValue:
    provider_queue("stripe").enqueue("builtins.len", "x")
    return jsonify(customer_id=g.customer.id), 201


csrf.exempt(auth_and_enqueue)
app.add_url_rule("/bench/auth-and-enqueue", "auth_and_enqueue", auth_and_enqueue, methods=["POST"])
