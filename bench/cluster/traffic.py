"""The cluster drill's API clients and what it reads back from the database.

Clients pay through both web hosts in turn. A request that fails in transit or with a
5xx is sent again, with the same Idempotency-Key, to the other web host: what a client
behind a balancer sees when one web host is lost.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import requests

from bench.cluster.hosts import WEB_HOSTS, Cluster

FINAL = ("succeeded", "failed", "needs_review")


@dataclass
class Shoppers:
    cluster: Cluster
    tokens: list[str]
    payment_ids: list[int] = field(default_factory=list)
    # Each payment the API acknowledged: when its request was first sent, when the answer
    # came (monotonic).
    acknowledged: list[tuple[float, float]] = field(default_factory=list)
    retried: int = 0  # requests sent again to the other web host
    gave_up: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _count: Any = field(default_factory=lambda: itertools.count())

    def pay_one(self) -> int | None:
        n = next(self._count)
        auth = {"Authorization": f"Bearer {self.tokens[n % len(self.tokens)]}"}
        order = self._call(
            n, "POST", "/api/orders", auth, {"items": [{"sku": "MUG-001", "quantity": 1}]}
        )
        if not order or "id" not in order:
            return None
        keyed = {**auth, "Idempotency-Key": str(uuid.uuid4())}
        path = f"/api/orders/{order['id']}/payments"
        sent = time.monotonic()
        payment = self._call(n, "POST", path, keyed, {"payment_method": "pm_card_visa"})
        if not payment or not isinstance(payment.get("id"), int):
            return None
        with self.lock:
            self.payment_ids.append(payment["id"])
            self.acknowledged.append((sent, time.monotonic()))
        return int(payment["id"])

    def first_acknowledged_after(self, at: float) -> float | None:
        """Seconds from `at` (monotonic) to the first acknowledgement of a payment whose
        request was sent after it: when the shop took payments again."""
        with self.lock:
            later = [acked for sent, acked in self.acknowledged if sent > at]
        return round(min(later) - at, 1) if later else None

    def _call(
        self, n: int, method: str, path: str, headers: dict[str, str], body: Any
    ) -> dict[str, Any] | None:
        for attempt in range(60):
            url = self.cluster.web_url(WEB_HOSTS[(n + attempt) % len(WEB_HOSTS)]) + path
            try:
                answer = requests.request(method, url, headers=headers, json=body, timeout=5)
                if answer.status_code < 500:
                    result: dict[str, Any] = answer.json()
                    return result
            except (requests.RequestException, ValueError):
                pass
            with self.lock:
                self.retried += 1
            time.sleep(0.25)
        with self.lock:
            self.gave_up += 1
        return None

    def backlog(self, count: int, threads: int = 8) -> list[int]:
        """`count` payments created as fast as the clients can (each its own order)."""
        made: list[int] = []
        lock = threading.Lock()

        def work(share: int) -> None:
            for _ in range(share):
                payment_id = self.pay_one()
                if payment_id is not None:
                    with lock:
                        made.append(payment_id)

        workers = [
            threading.Thread(target=work, args=(count // threads + (i < count % threads),))
            for i in range(threads)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return made

    def steady(self, rate_per_s: float, stop: threading.Event) -> None:
        """Payments at a steady rate, each in a thread of its own (open loop)."""
        inflight: list[threading.Thread] = []
        while not stop.wait(1 / rate_per_s):
            thread = threading.Thread(target=self.pay_one, daemon=True)
            thread.start()
            inflight.append(thread)
        for thread in inflight:
            thread.join(timeout=60)


def final_times(app: Any, ids: list[int] | None = None) -> dict[int, datetime]:
    """When each payment (of `ids`, or all) reached its final state, from the transitions."""
    from sqlalchemy import func, select

    from extensions import db
    from models import PaymentStatus, PaymentTransition

    with app.app_context():
        try:
            query = (
                select(PaymentTransition.payment_id, func.min(PaymentTransition.created_at))
                .where(PaymentTransition.to_status.in_([PaymentStatus(s) for s in FINAL]))
                .group_by(PaymentTransition.payment_id)
            )
            if ids is not None:
                query = query.where(PaymentTransition.payment_id.in_(ids))
            return {pid: at for pid, at in db.session.execute(query).all()}
        except Exception:
            return {}  # the database is unreachable for a moment: nothing known yet
        finally:
            db.session.remove()


def created_times(app: Any) -> dict[int, datetime]:
    from sqlalchemy import select

    from extensions import db
    from models import Payment

    with app.app_context():
        try:
            return dict(db.session.execute(select(Payment.id, Payment.created_at)).all())
        finally:
            db.session.remove()
