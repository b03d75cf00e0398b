"""Prometheus metrics. Counters are incremented where things happen; gauges are read at
scrape time. With PROMETHEUS_MULTIPROC_DIR set (supervisor sets it for every process),
counts from all gunicorn and RQ worker processes on the host are added up."""

from __future__ import annotations

import os
from collections.abc import Iterator

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
    "reconcile_attempts_total", "Lookups of unknown payments", ["provider"]
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


class LiveStateCollector(Collector):
    """Payments by status and breaker states, read from the database and Redis at scrape."""

    def __init__(self, read_state: object) -> None:
        self.read_state = read_state

    def collect(self) -> Iterator[GaugeMetricFamily]:
        payments, breakers = self.read_state()  # type: ignore[operator]
        by_status = GaugeMetricFamily("payments", "Payments by status", labels=["status"])
        for status, count in payments.items():
            by_status.add_metric([status], count)
        yield by_status
        states = GaugeMetricFamily(
            "breaker_state", "1 for the breaker's current state", labels=["provider", "state"]
        )
        transitions = GaugeMetricFamily(
            "breaker_transitions", "Breaker transitions so far", labels=["provider"]
        )
        for snapshot in breakers:
            states.add_metric([snapshot["provider"], snapshot["state"]], 1)
            transitions.add_metric([snapshot["provider"]], snapshot["transitions"])
        yield states
        yield transitions


def render(read_state: object | None) -> bytes:
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
