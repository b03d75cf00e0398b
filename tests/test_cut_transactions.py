"""A transaction cut by a failover (or a network cut) either committed or did not, and the
client cannot tell which: every money statement is retried only where that is safe, and
whichever it was, the end is the same. Each case is cut at the real statement by a
proxy in front of PostgreSQL (tests/db_cut_support.py), once before it reached the
server (not committed) and once after the server answered (committed, answer lost):
- the charge job's claim (one statement, retried once): a claim that did commit makes
  the retry claim nothing; the lease lapses and the next run decides by the key, so the
  card is charged once;
- the charge's outcome (the lean success statement, not retried): the job ends without
  knowing; a success that committed is final and the job's next run sends nothing; one
  that did not is decided by the next run, through the same idempotency key;
- a charge job whose outcome is lost altogether (the lean statement, then the ORM
  path's COMMIT): the job dies; its next run, once the lease lapsed, decides by the key
  committed before the call: the same key replayed, the card charged once;
- the API's payment intake (not retried: the ORM path asks again by the key): one
  payment, answered as made (201), as found by its key (200: the statement did commit
  and the request cannot tell it was its own), or 503 to retry with the key;
- a webhook's record (retried once, UNIQUE by provider and event id): recorded once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import time_machine
from flask import Flask
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from extensions import db
from models import Payment, PaymentStatus, ProcessedWebhook
from models.types import utcnow
from services.platform import autocommit
from tests.db_cut_support import CuttingProxy
from tests.helpers import api_customer, api_order, charge_payment, committed_payment, seed_catalog
from tests.webhook_support import signed_post, stripe_event

CLAIM = "UPDATE payments AS p SET lease_expires_at"
SUCCESS = "WITH ordered AS"
INTAKE = "INSERT INTO payments (idempotency_key"
RECORD = "INSERT INTO processed_webhooks"
BOTH = pytest.mark.parametrize("committed", [False, True], ids=["not-committed", "committed"])


@pytest.fixture
def proxy(app: Flask) -> Iterator[CuttingProxy]:
    with app.app_context():
        address = db.engine.url
    cutting = CuttingProxy((address.host or "127.0.0.1", int(address.port or 5432)))
    yield cutting
    cutting.close()


@pytest.fixture
def shop(app: Flask, make_app: Any, proxy: CuttingProxy) -> Flask:
    """The app with every connection through the proxy, statements sent as text."""
    with app.app_context():
        url = db.engine.url.render_as_string(hide_password=False)
    return make_app(
        SQLALCHEMY_DATABASE_URI=proxy.url_for(url),
        SQLALCHEMY_ENGINE_OPTIONS={"connect_args": {"prepare_threshold": None}},
    )


def _status(shop: Flask, payment_id: int) -> PaymentStatus:
    with shop.app_context():
        db.session.expire_all()
        return db.session.get_one(Payment, payment_id).status


def _charge_once_the_lease_lapsed(shop: Flask, payment_id: int) -> None:
    """The charge job's next run, ten minutes on (its lease lapsed: the sweep's job)."""
    with time_machine.travel(utcnow() + timedelta(minutes=10), tick=True), shop.app_context():
        charge_payment(payment_id)


def _creates(sandbox: Any) -> int:
    return len(sandbox.requests_log(endpoint="create"))


@BOTH
def test_a_cut_claim_charges_the_card_once(
    shop: Flask, proxy: CuttingProxy, sandbox: Any, committed: bool
) -> None:
    payment_id = committed_payment(shop)
    proxy.arm(CLAIM, committed=committed)
    with shop.app_context():
        autocommit.engine().dispose()
        charge_payment(payment_id)
    assert proxy.cuts == 1
    if committed:  # the retry found the row leased: nothing sent, the lease lapses
        assert _creates(sandbox) == 0 and _status(shop, payment_id) == PaymentStatus.PENDING
        _charge_once_the_lease_lapsed(shop, payment_id)
    assert _status(shop, payment_id) == PaymentStatus.SUCCEEDED
    assert _creates(sandbox) == 1


@BOTH
def test_a_cut_success_is_decided_by_the_key_and_charged_once(
    shop: Flask, proxy: CuttingProxy, sandbox: Any, committed: bool
) -> None:
    payment_id = committed_payment(shop)
    proxy.arm(SUCCESS, committed=committed)
    with shop.app_context():
        charge_payment(payment_id)  # the ORM path after the lean statement's loss
    assert proxy.cuts == 1
    sent = _creates(sandbox)
    _charge_once_the_lease_lapsed(shop, payment_id)
    assert _status(shop, payment_id) == PaymentStatus.SUCCEEDED
    with shop.app_context():
        payment = db.session.get_one(Payment, payment_id)
        keys = {r["idempotency_key"] for r in sandbox.requests_log(endpoint="create")}
        assert keys == {str(payment.idempotency_key)}  # only ever this payment's key
    assert len(sandbox.charges(status="succeeded")["data"]) == 1
    if committed:
        assert _creates(sandbox) == sent == 1  # final already: nothing sent again


def test_a_charge_job_whose_outcome_commit_is_lost_runs_again_and_charges_once(
    shop: Flask, proxy: CuttingProxy, sandbox: Any
) -> None:
    payment_id = committed_payment(shop)
    proxy.arm(SUCCESS, committed=False)
    proxy.arm("COMMIT", committed=False)  # and then the ORM path's
    with shop.app_context(), pytest.raises(OperationalError):
        charge_payment(payment_id)  # the job dies (RQ marks it failed)
    assert proxy.cuts == 2
    with shop.app_context():
        db.session.expire_all()
        lost = db.session.get_one(Payment, payment_id)
        # as the claim left it: sent once, leased, not decided
        assert (lost.status, lost.send_count, lost.provider_payment_id) == (
            PaymentStatus.PENDING,
            1,
            None,
        )
        assert lost.first_sent_at is not None and lost.lease_expires_at is not None
        key = str(lost.idempotency_key)
    _charge_once_the_lease_lapsed(shop, payment_id)
    assert _status(shop, payment_id) == PaymentStatus.SUCCEEDED
    sent = sandbox.requests_log(endpoint="create")
    assert [r["idempotency_key"] for r in sent] == [key, key]  # the same key, replayed
    assert len(sandbox.charges(status="succeeded")["data"]) == 1


@BOTH
def test_a_cut_payment_intake_makes_one_payment(
    shop: Flask, proxy: CuttingProxy, committed: bool
) -> None:
    with shop.app_context():
        seed_catalog()
    _, headers = api_customer(shop)
    client = shop.test_client()
    order = api_order(client, headers)["id"]
    key = {"Idempotency-Key": str(uuid.uuid4())}
    proxy.arm(INTAKE, committed=committed)
    first = client.post(
        f"/api/orders/{order}/payments",
        json={"payment_method": "pm_card_visa"},
        headers={**headers, **key},
    )
    assert proxy.cuts == 1
    assert first.status_code in (200, 201, 503), first.get_data(as_text=True)
    again = client.post(  # the client's retry with its key (after a 503), or a replay
        f"/api/orders/{order}/payments",
        json={"payment_method": "pm_card_visa"},
        headers={**headers, **key},
    )
    assert again.status_code in (200, 201), again.get_data(as_text=True)
    if first.status_code != 503:
        assert again.get_json()["id"] == first.get_json()["id"]
    with shop.app_context():
        assert db.session.scalar(select(func.count()).select_from(Payment)) == 1


@BOTH
def test_a_cut_webhook_record_records_it_once(
    shop: Flask, proxy: CuttingProxy, committed: bool
) -> None:
    event = stripe_event(None, intent_id="pi_cut")
    proxy.arm(RECORD, committed=committed)
    answer = signed_post(shop.test_client(), event)
    assert proxy.cuts == 1
    assert answer.status_code == 200, answer.get_data(as_text=True)
    redelivered = signed_post(shop.test_client(), event)
    assert redelivered.status_code == 200
    with shop.app_context():
        assert db.session.scalar(select(func.count()).select_from(ProcessedWebhook)) == 1
