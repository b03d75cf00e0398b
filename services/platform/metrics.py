"""Prometheus metrics. Counters are incremented where things happen; gauges are read at
scrape time. With PROMETHEUS_MULTIPROC_DIR set (supervisor sets it for every process),
counts from all gunicorn and RQ worker processes on the host are added up."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, g
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import REGISTRY, Collector

# The provider-call metrics belong to the gateway that counts them.
from resilience.gateway import BREAKER_REJECTIONS, PROVIDER_CALLS, PROVIDER_LATENCY

__all__ = ["BREAKER_REJECTIONS", "PROVIDER_CALLS", "PROVIDER_LATENCY"]

RECONCILE_ATTEMPTS = Counter(
    "reconcile_attempts_total",
    "Lookups of movements (charges, refunds) whose outcome is not known or not final",
    ["provider", "kind"],
)
WEBHOOK_EVENTS = Counter(
    "webhook_events_total", "Webhook deliveries by result", ["provider", "result"]
)
WALLET_OPERATIONS = Counter("wallet_operations_total", "Wallet movements", ["kind", "result"])
EMAILS = Counter("emails_total", "Outbox emails by kind and result", ["kind", "result"])
EMAIL_LATENCY = Histogram(
    "email_delivery_seconds",
    "From the outbox row's commit to the SMTP server's acceptance",
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 1800),
)
REPORT_MISMATCHES = Counter(
    "provider_report_mismatches_total",
    "Provider answers and webhooks that did not match the payment (sent to review)",
    ["provider", "source"],
)

# Saturation: requests being served right now, summed over the live web processes.
HTTP_IN_FLIGHT = Gauge(
    "http_requests_in_flight", "Web requests being served", multiprocess_mode="livesum"
)


def track_in_flight(app: Flask) -> None:
    """Count every request from its first hook to its teardown in HTTP_IN_FLIGHT."""

    def started() -> None:
        HTTP_IN_FLIGHT.inc()
        g.in_flight = True

    def finished(_exc: BaseException | None) -> None:
        if g.pop("in_flight", False):
            HTTP_IN_FLIGHT.dec()

    app.before_request_funcs.setdefault(None, []).insert(0, started)
    app.teardown_request(finished)


@dataclass
class LiveState:
    """What the scrape reads from the database and Redis (services/backoffice/dashboard.py)."""

    payments: dict[str, int]  # by status
    breakers: list[dict[str, Any]]
    oldest_age_s: dict[str, float | None] = field(default_factory=dict)  # watched statuses
    queue_depths: dict[str, int] = field(default_factory=dict)
    outbox: dict[str, int] = field(default_factory=dict)  # by status
    disputes: dict[str, int] = field(default_factory=dict)  # open ones, by status
    dispute_due_s: float | None = None  # to the soonest evidence deadline; None: none due


class LiveStateCollector(Collector):
    """Payments by status, the oldest payment of each watched status, breaker states,
    queue depths and the outbox, read at scrape (the alert rules' inputs)."""

    def __init__(self, read_state: Callable[[], LiveState]) -> None:
        self.read_state = read_state

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state = self.read_state()
        yield _family("payments", "Payments by status", "status", state.payments)
        yield _family(
            "payments_oldest_age_seconds",
            "Age of the oldest payment in each watched status",
            "status",
            {k: v for k, v in state.oldest_age_s.items() if v is not None},
        )
        yield _family("queue_depth", "Jobs waiting per queue", "queue", state.queue_depths)
        yield _family("outbox_messages", "Outbox emails by status", "status", state.outbox)
        yield _family("disputes", "Open disputes by status", "status", state.disputes)
        due = GaugeMetricFamily(
            "disputes_evidence_due_seconds",
            "Seconds to the soonest evidence deadline of a dispute waiting for our answer",
        )
        if state.dispute_due_s is not None:
            due.add_metric([], state.dispute_due_s)
        yield due
        states = GaugeMetricFamily(
            "breaker_state", "1 for the breaker's current state", labels=["provider", "state"]
        )
        transitions = GaugeMetricFamily(
            "breaker_transitions", "Breaker transitions so far", labels=["provider"]
        )
        auth_failed = GaugeMetricFamily(
            "provider_auth_failed",
            "1 while the provider refuses our credentials (401/403)",
            labels=["provider"],
        )
        for snapshot in state.breakers:
            states.add_metric([snapshot["provider"], snapshot["state"]], 1)
            transitions.add_metric([snapshot["provider"]], snapshot["transitions"])
            auth_failed.add_metric([snapshot["provider"]], 1 if snapshot.get("auth_failed") else 0)
        yield states
        yield transitions
        yield auth_failed


def _family(name: str, doc: str, label: str, values: dict[str, Any]) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=[label])
    for key, value in values.items():
        family.add_metric([key], value)
    return family


def render(read_state: Callable[[], LiveState] | None) -> bytes:
    """The exposition text: process counters (all processes in multiprocess mode) + live state."""
    registry = CollectorRegistry()
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
        text = generate_latest(registry)
    else:
        text = generate_latest(REGISTRY)
    if read_state is None:
        return text
    live = CollectorRegistry()
    live.register(LiveStateCollector(read_state))
    return text + generate_latest(live)
