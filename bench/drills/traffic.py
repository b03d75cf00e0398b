"""What the outage drill measures while it runs: page viewers (open-loop, so a stalled
site is measured, not hidden), payers at a steady rate, and the saturation of web
threads and RQ workers, per phase."""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import requests

from bench.drills.stack import STRIPE_QUEUE

PHASES = ("baseline", "outage", "degraded", "recovery")


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

    def page(self, ok: bool, ms: float, phase: str) -> None:
        with self.lock:
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
        started = time.perf_counter()
        try:
            ok = requests.get(f"{base}/", timeout=10).status_code == 200
        except requests.RequestException:
            ok = False
        obs.page(ok, (time.perf_counter() - started) * 1000, phase)

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
    """Busy web threads (the in-flight gauge, minus this scrape) and busy RQ workers."""
    from prometheus_client.parser import text_string_to_metric_families
    from redis import Redis
    from rq import Queue, Worker

    queue = Queue(STRIPE_QUEUE, connection=Redis.from_url(redis_url)) if redis_url else None
    session = requests.Session()
    while not stop.wait(0.5):
        phase = obs.phase
        try:
            text = session.get(f"{web_url}/metrics", timeout=5).text
            busy = sum(
                sample.value
                for family in text_string_to_metric_families(text)
                if family.name == "http_requests_in_flight"
                for sample in family.samples
            )
            obs.web_busy[phase].append(busy - 1)
        except (requests.RequestException, ValueError):
            pass
        if queue is not None:
            with contextlib.suppress(Exception):
                workers = Worker.all(queue=queue)
                obs.workers_busy[phase].append(sum(w.get_state() == "busy" for w in workers))


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
