"""What the outage drill measures while it runs: page viewers (open-loop, so a stalled
site is measured, not hidden), payers at a steady rate, and the saturation of web
threads and RQ workers, per phase."""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests

from bench.drills.stack import STRIPE_QUEUE

PHASES = ("baseline", "outage", "degraded", "recovery")
# Every THREE_DS_EVERY-th card payment of the drills' customers needs 3-D Secure.
THREE_DS_EVERY = 4
CARD, THREE_DS_CARD = "pm_card_visa", "pm_card_authenticationRequired"
# Every odd payment of the drills goes to Braintree, with its published test nonce (the
# API names the provider by the token's shape, as a client with its card entry would).
BRAINTREE_CARD = "fake-valid-nonce"


def card_for(bank: Authenticator, count: int) -> str:
    """The card of the drill's `count`-th payment: Braintree's for odd ones; Stripe's for
    even ones, every THREE_DS_EVERY-th needing 3-D Secure."""
    return BRAINTREE_CARD if count % 2 else bank.card_for(count)


class Authenticator:
    """Customers at their bank: for the drill's payments that need 3-D Secure, wait until
    the API answers `next_action`, then open the bank's page and press "Complete
    authentication" over HTTP, as the customer's browser would. The shop learns of it by
    webhook (or the backfill), like any outcome."""

    def __init__(self, web_url: str) -> None:
        self.web_url = web_url
        self.watched: dict[int, dict[str, str]] = {}  # payment id -> its customer's auth
        self.completed = 0
        self.lock = threading.Lock()
        self.session = requests.Session()

    def card_for(self, count: int) -> str:
        return THREE_DS_CARD if count % THREE_DS_EVERY == 0 else CARD

    def watch(self, payment_id: int, headers: dict[str, str]) -> None:
        with self.lock:
            self.watched[payment_id] = headers

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(0.5):
            with self.lock:
                watched = sorted(self.watched.items())
            for payment_id, headers in watched:
                with contextlib.suppress(requests.RequestException, ValueError, KeyError):
                    self._visit(payment_id, headers)

    def _visit(self, payment_id: int, headers: dict[str, str]) -> None:
        body = self.session.get(
            f"{self.web_url}/api/payments/{payment_id}", headers=headers, timeout=5
        ).json()
        action = body.get("next_action")
        if body.get("is_final"):
            with self.lock:
                self.watched.pop(payment_id, None)
        if not action:
            return
        url = action["url"]
        secret = parse_qs(urlsplit(url).query)["client_secret"][0]
        self.session.get(url, timeout=5).raise_for_status()
        answer = self.session.post(
            url.split("?")[0],
            data={"client_secret": secret, "action": "complete"},
            allow_redirects=False,
            timeout=5,
        )
        if answer.status_code in (200, 303):  # 200: answered already
            with self.lock:
                self.watched.pop(payment_id, None)
                self.completed += answer.status_code == 303


@dataclass
class Observations:
    page_ms: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})
    page_errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PHASES, 0))
    pay_ms: list[float] = field(default_factory=list)
    payment_ids: list[int] = field(default_factory=list)
    phase: str = "baseline"
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Busy web threads and busy RQ workers, sampled twice a second, per phase.
    web_busy: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})
    workers_busy: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PHASES})
    # Every view: when it started (time.monotonic()) and its latency, None when it failed.
    page_log: list[tuple[float, float | None]] = field(default_factory=list)

    def page(self, ok: bool, ms: float, phase: str, at: float | None = None) -> None:
        with self.lock:
            self.page_log.append((time.monotonic() if at is None else at, ms if ok else None))
            if ok:
                self.page_ms[phase].append(ms)
            else:
                self.page_errors[phase] += 1


def _percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 1)


def _viewer(base: str, obs: Observations, stop: threading.Event) -> None:
    """A customer opening a page that has nothing to do with payments, ten times a second.

    Open loop: each view starts on schedule in a thread of its own, whether or not the
    last one has answered, so a stalled site yields many slow samples rather than one
    (no coordinated omission). A view counts in the phase in which it started.
    """

    def view(phase: str) -> None:
        at, started = time.monotonic(), time.perf_counter()
        try:
            ok = requests.get(f"{base}/", timeout=10).status_code == 200
        except requests.RequestException:
            ok = False
        obs.page(ok, (time.perf_counter() - started) * 1000, phase, at)

    inflight: list[threading.Thread] = []
    while not stop.wait(0.1):
        thread = threading.Thread(target=view, args=(obs.phase,), daemon=True)
        thread.start()
        inflight.append(thread)
    for thread in inflight:
        thread.join(timeout=15)


def _payers(obs: Observations, pay: Any, rate_per_s: float, stop: threading.Event) -> None:
    """Customers pressing "Pay" at a steady rate, each in a request of their own."""
    inflight: list[threading.Thread] = []

    def one() -> None:
        started = time.perf_counter()
        pay()
        with obs.lock:
            obs.pay_ms.append((time.perf_counter() - started) * 1000)

    while not stop.is_set():
        if obs.phase != "recovery":
            thread = threading.Thread(target=one, daemon=True)
            thread.start()
            inflight.append(thread)
        time.sleep(1 / rate_per_s)
    for thread in inflight:
        thread.join(timeout=60)


def _sample_saturation(
    obs: Observations, web_url: str, redis_url: str | None, stop: threading.Event
) -> None:
    """Busy web threads and busy RQ workers."""
    from redis import Redis
    from rq import Queue, Worker

    queue = Queue(STRIPE_QUEUE, connection=Redis.from_url(redis_url)) if redis_url else None
    session = requests.Session()
    while not stop.wait(0.5):
        phase = obs.phase
        with contextlib.suppress(requests.RequestException, ValueError):
            obs.web_busy[phase].append(busy_web_threads(session, web_url))
        if queue is not None:
            with contextlib.suppress(Exception):
                workers = Worker.all(queue=queue)
                obs.workers_busy[phase].append(sum(w.get_state() == "busy" for w in workers))


def busy_web_threads(session: requests.Session, web_url: str) -> float:
    """Web threads serving a request: the in-flight gauge, minus this scrape."""
    from prometheus_client.parser import text_string_to_metric_families

    text = session.get(f"{web_url}/metrics", timeout=5).text
    busy = sum(
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "http_requests_in_flight"
        for sample in family.samples
    )
    return busy - 1


def _saturation(obs: Observations, web_slots: int, worker_slots: int) -> dict[str, Any]:
    def stats(values: list[float], slots: int) -> dict[str, Any]:
        if not values:
            return {"mean": None, "max": None, "slots": slots}
        return {"mean": round(sum(values) / len(values), 2), "max": max(values), "slots": slots}

    return {
        phase: {
            "web_busy": stats(obs.web_busy[phase], web_slots),
            "workers_busy": stats(obs.workers_busy[phase], worker_slots),
        }
        for phase in PHASES
    }


def _page_stats(obs: Observations) -> dict[str, Any]:
    return {
        phase: {
            "p50_ms": _percentile(obs.page_ms[phase], 0.5),
            "p99_ms": _percentile(obs.page_ms[phase], 0.99),
            "error_rate": round(
                obs.page_errors[phase] / max(1, obs.page_errors[phase] + len(obs.page_ms[phase])), 3
            ),
        }
        for phase in PHASES
    }


class Refunder:
    """An operator refunding a share of the succeeded card payments while faults come and
    go, through the same service as the dashboard and the CLI (in-process, on the drill's
    own app): half of them in full, half in part, some twice (the second may be refused)."""

    def __init__(self, app: Any, rng: Any, every_s: float = 1.5) -> None:
        self.app, self.rng, self.every_s = app, rng, every_s
        self.last, self.requested, self.refused, self.failed = 0.0, 0, 0, 0

    def tick(self) -> None:
        if time.monotonic() - self.last < self.every_s:
            return
        self.last = time.monotonic()
        import uuid

        from sqlalchemy import select

        from extensions import db
        from models import Payment, PaymentPurpose, PaymentStatus
        from services.platform.errors import ClientError
        from services.refunds.issue import refund_payment

        with self.app.app_context():
            try:
                ids = db.session.scalars(
                    select(Payment.id).where(
                        Payment.status == PaymentStatus.SUCCEEDED,
                        Payment.purpose == PaymentPurpose.ORDER,
                    )
                ).all()
                if not ids:
                    return
                payment_id = self.rng.choice(ids)
                amount = None if self.rng.random() < 0.5 else self.rng.choice((100, 300, 700))
                refund_payment(payment_id, amount, "chaos drill refund", "drill", uuid.uuid4())
                self.requested += 1
            except ClientError:
                self.refused += 1  # over-refund, fully refunded: refused, nothing written
            except Exception:
                self.failed += 1  # the database or Redis is down: the operator tries later
            finally:
                db.session.remove()


def payment_statuses(web_url: str, auth: dict[str, str], ids: list[int]) -> dict[int, str]:
    """Each payment's status as its customer's API answers it ("?" when it cannot)."""
    found = {}
    for payment_id in ids:
        try:
            found[payment_id] = requests.get(
                f"{web_url}/api/payments/{payment_id}", headers=auth, timeout=10
            ).json()["status"]
        except (requests.RequestException, KeyError, ValueError):
            found[payment_id] = "?"
    return found
