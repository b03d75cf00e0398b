"""One lock order (order, payment, wallet) everywhere: concurrent payment requests and
charge jobs on the same order never deadlock (real threads, real worker processes,
PostgreSQL)."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from redis import Redis
from rq import Queue
from rq.registry import FailedJobRegistry
from sqlalchemy import func, select, text

from extensions import db
from models import Customer, Payment, PaymentStatus
from services.movements.locks import lock_owned_order
from services.payments.checkout import start_order_payment
from services.platform.errors import ConflictError
from services.platform.queues import provider_queue_name
from tests.factories import TEST_CARDS, make_customer, make_order, make_payment
from tests.helpers import api_order, api_pay, charge_payment
from tests.worker_support import start_worker, stop_workers, wait_for

# The random gaps between concurrent calls are seeded: a failure replays the same way.
SEED = 20261202


@pytest.fixture
def workers(app: Flask, sandbox: Any) -> Iterator[None]:
    """Two real workers charging while the requests arrive (a little provider latency
    keeps their transactions open across the requests' ones)."""
    sandbox.add_fault("latency", ms=20, dialect="stripe")
    started = [start_worker(app, sandbox) for _ in range(2)]
    yield
    stop_workers(started)


def _failed_jobs(app: Flask) -> int:
    queue = Queue(provider_queue_name("stripe"), connection=Redis.from_url(app.config["REDIS_URL"]))
    return FailedJobRegistry(queue=queue).count


def _all_final(app: Flask) -> bool:
    with app.app_context():
        open_ = db.session.scalar(
            select(func.count())
            .select_from(Payment)
            .where(Payment.status.in_((PaymentStatus.PENDING, PaymentStatus.UNKNOWN)))
        )
        db.session.rollback()
        return open_ == 0


def _run(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)


@pytest.mark.usefixtures("workers")
def test_twenty_requests_with_one_key_while_jobs_charge(
    app: Flask, api: dict[str, str], client: FlaskClient
) -> None:
    orders = [api_order(client, api)["id"] for _ in range(8)]
    answers: dict[int, list[tuple[int, int | None]]] = {order_id: [] for order_id in orders}

    def pay(order_id: int, key: str, barrier: threading.Barrier, seed: int) -> None:
        pauses = random.Random(seed)  # seeded: a failure replays with the same gaps
        with app.test_client() as own:
            barrier.wait()
            for _ in range(2):  # the first call starts the charge, the second meets the job
                response = api_pay(own, api, order_id, key)
                answers[order_id].append((response.status_code, response.get_json().get("id")))
                time.sleep(pauses.uniform(0.0, 0.05))

    threads: list[threading.Thread] = []
    for order_id in orders:
        barrier = threading.Barrier(20, timeout=60)
        key = str(uuid.uuid4())
        threads += [
            threading.Thread(target=pay, args=(order_id, key, barrier, SEED + len(threads) + n))
            for n in range(20)
        ]
    _run(threads)
    for order_id, seen in answers.items():
        codes = sorted(code for code, _ in seen)
        assert codes == [200] * 39 + [201], (order_id, codes)
        assert len({payment_id for _, payment_id in seen}) == 1
    wait_for(lambda: _all_final(app), timeout_s=60)
    assert _failed_jobs(app) == 0


@pytest.mark.usefixtures("workers")
def test_two_tabs_paying_one_order_make_one_payment(
    app: Flask, api: dict[str, str], client: FlaskClient, sandbox: Any
) -> None:
    orders = [api_order(client, api)["id"] for _ in range(40)]
    answers: list[tuple[int, int]] = []

    def tab(order_id: int, delay_s: float) -> None:
        with app.test_client() as own:
            time.sleep(delay_s)
            response = api_pay(own, api, order_id, str(uuid.uuid4()))
            answers.append((order_id, response.status_code))

    threads = []
    gaps = random.Random(SEED)
    for order_id in orders:
        gap = gaps.uniform(0.005, 0.08)
        threads += [
            threading.Thread(target=tab, args=(order_id, 0.0)),
            threading.Thread(target=tab, args=(order_id, gap)),
        ]
    _run(threads)
    assert len(answers) == 2 * len(orders)
    assert all(code in (201, 409) for _, code in answers), sorted(c for _, c in answers)
    wait_for(lambda: _all_final(app), timeout_s=60)
    with app.app_context():
        per_order = dict(
            db.session.execute(
                select(Payment.order_id, func.count())
                .where(Payment.status == PaymentStatus.SUCCEEDED)
                .group_by(Payment.order_id)
            ).all()
        )
    assert per_order == {order_id: 1 for order_id in orders}
    assert _failed_jobs(app) == 0
    for order_id in orders:
        assert sum(1 for o, code in answers if o == order_id and code == 201) == 1


def _waiting_on_locks(app: Flask) -> int:
    with app.app_context():
        waiting = db.session.scalar(
            text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
        )
        db.session.rollback()
        return int(waiting or 0)


@pytest.mark.parametrize("same_key", [True, False], ids=["same-key", "second-tab"])
def test_a_checkout_holding_the_order_and_a_charge_job_never_deadlock(
    app: Flask, sandbox: Any, same_key: bool
) -> None:
    """The interleaving that deadlocked, forced: a checkout holds the order's row lock,
    the charge job of the order's payment runs, then the checkout inserts its payment.
    The job must wait for the order before it touches the payment row."""
    with app.app_context():
        customer = make_customer()
        first = make_payment(make_order(customer))
        db.session.commit()
        customer_id, order_id, payment_id = customer.id, first.order_id, first.id
        first_key = first.idempotency_key
    assert order_id is not None
    job_errors: list[BaseException] = []
    checkout_result: list[object] = []

    def job() -> None:
        with app.app_context():
            try:
                charge_payment(payment_id)
            except BaseException as exc:
                job_errors.append(exc)

    with app.app_context():
        shopper = db.session.get(Customer, customer_id)
        assert shopper is not None
        lock_owned_order(shopper, order_id)  # the checkout's first statement, held
        charging = threading.Thread(target=job)
        charging.start()
        wait_for(lambda: _waiting_on_locks(app) >= 1, timeout_s=10)
        try:
            key = first_key if same_key else uuid.uuid4()
            payment, is_new = start_order_payment(shopper, order_id, key, TEST_CARDS["stripe"])
            checkout_result.append((payment.id, is_new))
        except ConflictError as exc:
            db.session.rollback()
            checkout_result.append(exc.code)
        charging.join(timeout=30)
    assert job_errors == []
    expected = [(payment_id, False)] if same_key else ["order_payment_in_progress"]
    assert checkout_result == expected
    with app.app_context():
        done = db.session.get(Payment, payment_id)
        assert done is not None and done.status == PaymentStatus.SUCCEEDED
