"""The database loses its primary: a real standby (streaming replication from the primary,
pg_basebackup) is promoted, and the app, given both hosts in one libpq URL with
`target_session_attrs=read-write`, reaches the new primary by itself: its pooled
connections to the dead one are dropped and replaced. While no host takes writes a
request answers 503 with Retry-After, never a 500 and never a 201; what the API
acknowledged before is on the new primary."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Flask
from flask_migrate import upgrade
from sqlalchemy import select

from devtools.postgres import postgres_cluster, streaming_standby
from extensions import db
from models import Payment
from tests.helpers import api_customer, api_order, seed_catalog


def _both(primary: Any, standby: Any) -> str:
    hosts = "&".join(f"host={c.host}:{c.port}" for c in (primary, standby))
    return f"postgresql+psycopg://postgres@/payments_test?{hosts}&target_session_attrs=read-write"


def _pay(client: Any, headers: dict[str, str], order_id: int) -> Any:
    return client.post(
        f"/api/orders/{order_id}/payments",
        json={"payment_method": "pm_card_visa"},
        headers={**headers, "Idempotency-Key": str(uuid.uuid4())},
    )


def test_the_app_reaches_the_promoted_standby_by_itself(app: Flask, make_app: Any) -> None:
    with postgres_cluster() as primary, streaming_standby(primary) as standby:
        # A cluster of its own, whose superuser both migrates and runs the app.
        shop = make_app(SQLALCHEMY_DATABASE_URI=_both(primary, standby), DATABASE_OWNER_URL="")
        with shop.app_context():
            upgrade()  # on the primary; the standby replays it
            seed_catalog()
        _, headers = api_customer(shop)
        client = shop.test_client()
        before = _pay(client, headers, api_order(client, headers)["id"])
        assert before.status_code == 201
        order = api_order(client, headers)["id"]  # its payment comes during the switch

        primary.stop("immediate")  # the primary dies; the standby is still read-only
        during = _pay(client, headers, order)
        assert during.status_code == 503, during.get_data(as_text=True)
        assert during.headers["Retry-After"] == "1"

        standby.promote()
        after = _pay(client, headers, order)  # the same app: its pool reconnects
        assert after.status_code == 201, after.get_data(as_text=True)
        with shop.app_context():
            ids = set(db.session.scalars(select(Payment.id)))
        assert ids == {before.get_json()["id"], after.get_json()["id"]}  # nothing lost
