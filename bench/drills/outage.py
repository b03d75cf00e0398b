"""The outage drill: reproduce the incident of DESIGN.md against this system and against
the naive integration that caused it, with the same traffic and the same faults.

    python -m bench.drills outage [--viewers 4] [--pay-rate 2] [--phase-s 8] [--hang-s 8]

Phases: baseline (provider at ~300 ms), outage (the provider hangs for hang-s),
degraded (half the charges commit, then the answer is held for hang-s; 503 on
30 % of requests), recovery. Both systems get the same traffic and faults.
Reported as a table, PASS/FAIL lines and JSON (bench/results/outage-<database>.json);
exit 1 when a check fails.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import requests

from bench.common import sandbox_url, served, write_results
from bench.drills import emails, report
from bench.drills.outage_report import draw, print_table, verdict
from bench.drills.stack import (
    STRIPE_QUEUE,
    Sweeper,
    api_customer,
    running_stack,
)
from bench.drills.traffic import (
    PHASES,
    THREE_DS_CARD,
    Authenticator,
    Observations,
    _page_stats,
    _payers,
    _percentile,
    _sample_saturation,
    _saturation,
    _viewer,
    card_for,
    payment_statuses,
)

WEB_WORKERS, WEB_THREADS, QUEUE_WORKERS = 2, 4, 2  # the same web capacity for both systems
QUEUE_SLOTS = 8  # each provider worker runs this many calls at once (threads), as in production
WEB_SLOTS = WEB_WORKERS * WEB_THREADS
FINAL = {"succeeded", "failed", "needs_review"}

# This system, tuned so a drill takes a minute, not an hour (same ratios as production).
SETTINGS = {
    "PROVIDER_CONNECT_TIMEOUT_S": "1",
    "PROVIDER_READ_TIMEOUT_S": "2",
    "PROVIDER_CALL_BUDGET_S": "5",
    "PROVIDER_MAX_RETRIES": "1",
    "BREAKER_FAILURE_THRESHOLD": "3",
    "BREAKER_OPEN_S": "3",
    "BREAKER_OPEN_MAX_S": "8",
    "BREAKER_MIN_CALLS": "20",
    "BREAKER_SLOW_CALL_S": "1.5",
    "RECONCILE_DELAYS_S": "1,2,4,8",
    "RECONCILE_MAX_ATTEMPTS": "5",  # escalate within ~25 s, inside the settle time
    "SEND_DEFER_S": "1",
    # Stripe's search may lag a minute; the sandbox's does not: after 5 s, "not found"
    # means never charged, so a lost charge resolves to failed instead of review.
    "STRIPE_SETTLE_S": "5",
    # Braintree's search lags 2 s in the sandbox: its "not found" proves absence after 35 s
    # (the hang's 30 s and the lag), where production waits 180 s.
    "BRAINTREE_SETTLE_S": "35",
    "PENDING_SWEEP_GRACE_S": "5",
    # A 3-D Secure payment whose customer never answered is cancelled inside the settle time.
    "SCA_TIMEOUT_S": "20",
}


def _faults(sandbox: str, phase: str, hang_s: float) -> None:
    requests.delete(f"{sandbox}/_sandbox/faults", timeout=5)

    def add(**spec: Any) -> None:
        requests.post(f"{sandbox}/_sandbox/faults", json=spec, timeout=5)

    # Both providers, each in its own words: Stripe creates an intent, Braintree a sale.
    # Unkind as the providers' docs allow: a balancer's 503 page after the sale was made
    # (Braintree keeps no keys: only its search before any repeat stops a second sale).
    for dialect, create in (("stripe", "create"), ("braintree", "sale")):
        add(kind="latency", ms=300, dialect=dialect)
        if phase == "outage":
            add(kind="hang", seconds=hang_s, dialect=dialect)
        elif phase == "degraded":
            add(kind="commit_timeout", hold_s=hang_s, rate=0.5, dialect=dialect, endpoint=create)
            after = {"status": 503, "phase": "after", "html": True}
            add(kind="error", **after, rate=0.2, dialect=dialect, endpoint=create)
            add(kind="error", status=503, rate=0.3, dialect=dialect)


def drill_ours(
    viewers: int,
    pay_rate: float,
    phase_s: float,
    hang_s: float,
    settle_s: float,
    notifications_queue: str = "notifications",
    slots: int = QUEUE_SLOTS,
    stripe_only: bool = False,
) -> dict[str, Any]:
    """This system under the phases. `notifications_queue`: the emails' own queue (the
    bulkhead) or, for the comparison, the card provider's queue (one shared queue);
    `slots`: the calls each provider worker runs at once; `stripe_only`: every payment
    at Stripe (else every other one at Braintree)."""
    with running_stack(
        settings={**SETTINGS, "NOTIFICATIONS_QUEUE": notifications_queue},
        web_workers=WEB_WORKERS,
        web_threads=WEB_THREADS,
        queue_workers=QUEUE_WORKERS,
        queue_slots=slots,
    ) as stack:
        sweeper = Sweeper(stack, grace_s=int(SETTINGS["PENDING_SWEEP_GRACE_S"]))
        sweeper.cli("seed")
        token = api_customer(sweeper, "drill@example.com")
        auth = {"Authorization": f"Bearer {token}"}
        obs = Observations()
        bank = Authenticator(stack.web_url)
        counter = itertools.count(1)

        def pay() -> None:
            session = requests.Session()
            count = next(counter)
            card = bank.card_for(count) if stripe_only else card_for(bank, count)
            try:
                order = session.post(
                    f"{stack.web_url}/api/orders",
                    headers=auth,
                    timeout=10,
                    json={"items": [{"sku": "MUG-001", "quantity": 1}]},
                ).json()
                payment = session.post(
                    f"{stack.web_url}/api/orders/{order['id']}/payments",
                    headers={**auth, "Idempotency-Key": str(uuid.uuid4())},
                    json={"payment_method": card},
                    timeout=10,
                ).json()
                with obs.lock:
                    obs.payment_ids.append(payment["id"])
                if card == THREE_DS_CARD:
                    bank.watch(payment["id"], auth)
            except (requests.RequestException, KeyError, ValueError):
                pass

        stop_sampling, stop_bank = threading.Event(), threading.Event()
        sampler = threading.Thread(
            target=_sample_saturation,
            args=(obs, stack.web_url, stack.redis_url, stop_sampling),
            daemon=True,
        )
        sampler.start()
        recorder = report.watch(sweeper.app, stack.sandbox_url, stack.web_url)
        authenticating = threading.Thread(target=bank.run, args=(stop_bank,), daemon=True)
        authenticating.start()
        emailer, stop_emails, emailing = emails.start(sweeper.app, obs)
        result, recovered_at = _run_phases_with(
            obs,
            stack.web_url,
            stack.sandbox_url,
            pay,
            viewers,
            pay_rate,
            phase_s,
            hang_s,
            sweeper.tick,
            recorder,
        )
        stop_sampling.set()
        stop_emails.set()
        sampler.join(timeout=10)
        emailing.join(timeout=30)
        statuses: dict[int, str] = {}
        deadline = time.monotonic() + settle_s
        all_final_at = None
        while time.monotonic() < deadline:
            sweeper.tick()
            statuses = payment_statuses(stack.web_url, auth, result.payment_ids)
            if statuses and all(s in FINAL for s in statuses.values()):
                all_final_at = time.monotonic()
                break
            time.sleep(1)
        recorder.mark("all final" if all_final_at else "settle time over")
        time.sleep(2 * recorder.every_s)  # the picture shows the end, not only its mark
        recorder.stop()
        stop_bank.set()
        authenticating.join(timeout=10)
        emails.wait_for_delivery(emailer, settle_s)
        email_latencies = emailer.latencies()  # before the drill's app is closed
        charges = requests.get(f"{stack.sandbox_url}/_sandbox/charges", timeout=10).json()
        breaker = sweeper.breaker_snapshot()
        sweeper.close()
        return {
            "pages": _page_stats(result),
            # A threaded worker is busy while a call or more is in its slots.
            "saturation": _saturation(result, WEB_SLOTS, QUEUE_WORKERS),
            "payments": len(result.payment_ids),
            "pay_request_p99_ms": _percentile(result.pay_ms, 0.99),
            "double_charges": len(charges["double_charged_payments"]),
            "charged_by_provider": dict(
                Counter(c["dialect"] for c in charges["data"] if c["status"] == "succeeded")
            ),
            "three_ds_authenticated": bank.completed,
            "emails": email_latencies,
            "not_final_at_end": sum(1 for s in statuses.values() if s not in FINAL),
            "final_statuses": dict(Counter(statuses.values())),
            "recovery_to_all_final_s": round(all_final_at - recovered_at, 1)
            if all_final_at
            else None,
            "breaker_probes": breaker.get("probes"),
            "breaker_rejected_calls": breaker.get("rejected"),
            "provider_requests": requests.get(
                f"{stack.sandbox_url}/_sandbox/requests", timeout=10
            ).json()["count"],
            "timeline": report.timeline(recorder, result),
        }


def _run_phases_with(
    obs: Observations,
    base: str,
    sandbox: str,
    pay: Any,
    viewers: int,
    pay_rate_per_s: float,
    phase_s: float,
    hang_s: float,
    on_tick: Any,
    recorder: report.Recorder,
) -> tuple[Observations, float]:
    stop = threading.Event()
    threads = [
        threading.Thread(target=_viewer, args=(base, obs, stop), daemon=True)
        for _ in range(viewers)
    ]
    threads.append(
        threading.Thread(target=_payers, args=(obs, pay, pay_rate_per_s, stop), daemon=True)
    )
    _faults(sandbox, "baseline", hang_s)
    for thread in threads:
        thread.start()
    recovered_at = 0.0
    for phase in PHASES:
        obs.phase = phase
        _faults(sandbox, phase, hang_s)
        recorder.mark(phase)
        if phase == "recovery":
            recovered_at = time.monotonic()
        deadline = time.monotonic() + phase_s
        while time.monotonic() < deadline:
            on_tick()
            time.sleep(0.5)
    stop.set()
    for thread in threads:
        thread.join(timeout=90)
    return obs, recovered_at


def drill_naive(
    viewers: int,
    pay_rate: float,
    phase_s: float,
    hang_s: float,
    naive_timeout_s: float,
    settle_s: float,
) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="naive-") as tmp,
        sandbox_url() as sandbox,
    ):
        Path(tmp, "prometheus").mkdir()
        env = {
            **os.environ,
            "NAIVE_PROVIDER_URL": sandbox,
            "NAIVE_TIMEOUT_S": str(naive_timeout_s),
            "PROMETHEUS_MULTIPROC_DIR": f"{tmp}/prometheus",
        }
        with served("bench.drills.naive_app:app", WEB_WORKERS, env) as base:
            counter = iter(range(10**9))
            obs = Observations()
            # What its customers see: the naive system keeps no state of its own.
            seen = Counter({"waiting": 0, "answered": 0, "error": 0})

            def pay() -> None:
                ref = next(counter)
                with obs.lock:
                    obs.payment_ids.append(ref)
                    seen["waiting"] += 1
                outcome = "error"
                with contextlib.suppress(requests.RequestException):
                    answer = requests.post(f"{base}/pay/{ref}", timeout=naive_timeout_s * 3)
                    outcome = "answered" if answer.ok else "error"
                with obs.lock:
                    seen["waiting"] -= 1
                    seen[outcome] += 1

            def states() -> dict[str, float]:
                with obs.lock:
                    return dict(seen)

            stop_sampling = threading.Event()
            sampler = threading.Thread(
                target=_sample_saturation, args=(obs, base, None, stop_sampling), daemon=True
            )
            sampler.start()
            recorder = report.Recorder(
                {
                    "payments": states,
                    "double_charges": report.sandbox_probe(sandbox),
                    "web_busy": report.busy_probe(base),
                }
            ).start()
            result, _ = _run_phases_with(
                obs, base, sandbox, pay, viewers, pay_rate, phase_s, hang_s, lambda: None, recorder
            )
            stop_sampling.set()
            sampler.join(timeout=10)
            time.sleep(min(settle_s, hang_s + naive_timeout_s * 2))  # let hung requests land
            recorder.mark("hung requests landed")
            time.sleep(2 * recorder.every_s)
            recorder.stop()
            charges = requests.get(f"{sandbox}/_sandbox/charges", timeout=10).json()
            return {
                "pages": _page_stats(result),
                "saturation": _saturation(result, WEB_SLOTS, 0),
                "payments": len(result.payment_ids),
                "pay_request_p99_ms": _percentile(result.pay_ms, 0.99),
                "double_charges": len(charges["double_charged_payments"]),
                "not_final_at_end": None,
                "provider_requests": requests.get(
                    f"{sandbox}/_sandbox/requests", timeout=10
                ).json()["count"],
                "timeline": report.timeline(recorder, result),
            }


def run(
    viewers: int = 4,
    pay_rate: float = 2.0,
    phase_s: float = 8,
    hang_s: float = 8,
    naive_timeout_s: float = 5,
    settle_s: float = 90,
    with_shared_queue: bool = True,
    publish: bool = False,
) -> dict[str, Any]:
    ours = drill_ours(viewers, pay_rate, phase_s, hang_s, settle_s)
    naive = drill_naive(viewers, pay_rate, phase_s, hang_s, naive_timeout_s, settle_s)
    # The emails on the card provider's queue instead of their own: the bulkhead, removed,
    # with one call per worker, so that the hanging provider fills the queue's capacity
    # (with 8 slots a worker, at 2 payments a second, it did not: 2026-12-02), and every
    # payment on that queue (with half of them at Braintree, the queue the emails share
    # carried half the load, and they stalled only 1.8x: 2026-12-06).
    shared = (
        drill_ours(
            viewers, pay_rate, phase_s, hang_s, settle_s, STRIPE_QUEUE, slots=1, stripe_only=True
        )
        if with_shared_queue
        else None
    )
    results: dict[str, Any] = {
        "viewers": viewers,
        "payments_per_s": pay_rate,
        "phase_s": phase_s,
        "hang_s": hang_s,
        "naive_timeout_s": naive_timeout_s,
        "provider_workers": {"processes": QUEUE_WORKERS, "slots_each": QUEUE_SLOTS},
        "database": "postgres",
        "this_system": ours,
        "naive": naive,
        "emails_on_a_shared_queue": shared["emails"] if shared else None,
    }
    checks = results["verdict"] = verdict(results)
    print_table(results)
    for check, passed in checks.items():
        print(f"{'PASS' if passed else 'FAIL'}  {check}")
    name = "outage-postgres"  # the name docs/ embeds (from when SQLite had a half too)
    results["report"] = str(draw(results, name, publish))
    path = write_results(name, results)
    print(f"results in {path}, pictures in {results['report']}")
    return results
