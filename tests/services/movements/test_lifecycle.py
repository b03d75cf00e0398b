"""One lifecycle for charges and refunds: the four places where the refunds' copy had
drifted from the charges' original, each shown on a refund (services/movements/)."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from redis import Redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry
from sqlalchemy import select

from extensions import db
from models import PaymentStatus, Refund, RefundStatus, RefundTransition, TransitionSource
from models.types import utcnow
from providers.braintree.client import SETTLE_S
from providers.outcomes import Absent, NotSent
from resilience.gateway import CIRCUIT_OPEN
from services.movements import lifecycle
from services.movements.kinds import Kind
from services.payments.kind import CHARGE
from services.platform import day_counts
from services.platform.metrics import RECONCILE_ATTEMPTS, REPORT_MISMATCHES
from services.platform.provider_clients import breaker_for, provider_for
from services.platform.queues import provider_queue_name
from services.refunds.issue import refund_payment
from services.refunds.kind import REFUND
from settings import settings
from tests.helpers import (
    charged,
    committed_payment,
    override_settings,
    reconcile_refund,
    sandbox_refunds,
    send_refund,
)


def _as(kind: Kind, moves: Any, apply: Any = None) -> Kind:
    """The kind with a recording state machine and, when given, `apply()` as its reading
    of an answer."""
    return dataclasses.replace(
        kind, move=moves, apply=lambda *_: apply() if apply else lifecycle.nothing
    )


def _refund(app: Flask, provider: str = "stripe", amount: int = 400) -> int:
    payment_id = charged(app, committed_payment(app, provider=provider))
    with app.app_context():
        refund, _ = refund_payment(payment_id, amount, "customer asked", "ops", uuid.uuid4())
        return refund.id


def _get(app: Flask, refund_id: int) -> Refund:
    with app.app_context():
        refund = db.session.get(Refund, refund_id)
        assert refund is not None
        db.session.expunge(refund)
        return refund


def test_an_open_circuit_defers_a_refund_until_the_breaker_may_let_it_through(
    app: Flask, sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Drift 1: refunds deferred by SEND_DEFER_S, ignoring the breaker's retry time."""
    refund_id = _refund(app)
    override_settings(monkeypatch, app, SEND_DEFER_S=1)
    with app.app_context():
        breaker = breaker_for("stripe")
        for _ in range(int(breaker.config.failure_threshold)):
            breaker.record(is_failure=True, duration_s=0.01)  # opens for open_s (15 s)
        send_refund(refund_id)
    refund = _get(app, refund_id)
    assert refund.status == RefundStatus.PENDING and refund.first_sent_at is None
    assert refund.next_attempt_at is not None
    assert refund.next_attempt_at - utcnow() > timedelta(seconds=10)  # the breaker's, not 1 s
    assert sandbox_refunds(sandbox) == []


def test_a_refund_sent_is_recorded_as_the_refund_jobs_not_a_charges(
    app: Flask, sandbox: Any
) -> None:
    """Drift 2: refund sends were recorded with TransitionSource.CHARGE."""
    refund_id = _refund(app)
    with app.app_context():
        send_refund(refund_id)
        sources = db.session.scalars(
            select(RefundTransition.source).where(RefundTransition.refund_id == refund_id)
        ).all()
    assert list(sources)[-1] == TransitionSource.REFUND
    assert TransitionSource.CHARGE not in sources


def test_a_refund_answer_that_does_not_match_counts_as_a_mismatch(app: Flask, sandbox: Any) -> None:
    """Drift 3: the dashboard's mismatch count (and the metric) left refunds out."""
    refund_id = _refund(app)
    sandbox.add_fault("tamper", field="amount", value=1, dialect="stripe", endpoint="refund")
    metric = REPORT_MISMATCHES.labels("stripe", TransitionSource.REFUND.value)
    before = metric._value.get()
    with app.app_context():
        counted = (day_counts.today_counts(day_counts.REPORT_MISMATCHES) or [0])[0]
        send_refund(refund_id)
        assert day_counts.today_counts(day_counts.REPORT_MISMATCHES) == [counted + 1]
    assert _get(app, refund_id).status == RefundStatus.NEEDS_REVIEW
    assert metric._value.get() == before + 1


def test_the_key_less_re_send_of_a_refund_is_recorded_before_it_leaves(
    app: Flask, sandbox: Any
) -> None:
    """Drift 4: the key-less provider's re-send of a refund it never got was not recorded
    as sent (first_sent_at, send_count) before the call, as the charge's re-send is."""
    refund_id = _refund(app, provider="braintree")
    sandbox.age_braintree(3600)  # the sale settles: Braintree refunds only settled sales
    with app.app_context():
        refund = db.session.get(Refund, refund_id)
        assert refund is not None
        # Sent once, answer lost, and Braintree never got it; long enough ago that its
        # sale's list of credits proves that.
        sent = utcnow() - timedelta(seconds=SETTLE_S + 20)
        refund.status, refund.first_sent_at, refund.last_sent_at, refund.send_count = (
            RefundStatus.UNKNOWN,
            sent,
            sent,
            1,
        )
        db.session.commit()
        reconcile_refund(refund_id)  # looks up (absent), then re-sends
    refund = _get(app, refund_id)
    assert refund.status == RefundStatus.SUCCEEDED
    assert refund.send_count == 2
    assert [r["amount"] for r in sandbox_refunds(sandbox, dialect="braintree")] == [400]


@dataclass
class _Row:
    """A movement row as the lifecycle sees it (the Movement protocol), unsaved."""

    id: int = 41
    provider: str = "stripe"
    status: Any = PaymentStatus.UNKNOWN
    first_sent_at: datetime | None = None
    last_sent_at: datetime | None = None
    send_count: int = 0
    lease_expires_at: datetime | None = None
    next_attempt_at: datetime | None = None
    next_reconcile_at: datetime | None = None
    reconcile_attempts: int = 0
    last_error: str | None = None


class _Moves:
    """A kind's move that records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[Any, str, str]] = []
        self.rows: list[Any] = []

    def __call__(self, row: Any, to: Any, /, *, source: TransitionSource, reason: str) -> bool:
        self.asked.append((to, source.value, reason))
        self.rows.append(row)
        return True


def _scheduled(app: Flask) -> list[str]:
    """The ids of the provider queue's scheduled jobs; each is for row 41."""
    connection = Redis.from_url(app.config["REDIS_URL"])
    queue = Queue(provider_queue_name("stripe"), connection=connection)
    ids = list(ScheduledJobRegistry(queue=queue).get_job_ids())
    assert all(Job.fetch(i, connection=connection).args[-1] == 41 for i in ids)
    return ids


def test_a_send_is_recorded_before_the_call_and_undone_when_it_never_left(
    app_ctx: Flask,
) -> None:
    first, later = utcnow(), utcnow() + timedelta(seconds=5)
    row = _Row()
    assert lifecycle.mark_sending(row, first) is None
    assert (row.first_sent_at, row.send_count, row.last_sent_at) == (first, 1, first)
    assert lifecycle.mark_sending(row, later) == first
    assert (row.first_sent_at, row.send_count, row.last_sent_at) == (first, 2, later)
    lifecycle.unmark_sending(row, first)
    assert (row.first_sent_at, row.send_count) == (first, 1)
    lifecycle.unmark_sending(row, None)
    assert (row.first_sent_at, row.send_count) == (None, 0)
    assert lifecycle.lease_until(first) == first + timedelta(seconds=settings().payments.lease_s)


@pytest.mark.parametrize(("retry_after_s", "delay_s"), [(100.0, 100.0), (None, 15.0)])
def test_a_request_not_sent_is_sent_again_after_its_retry_time_jittered(
    app_ctx: Flask, retry_after_s: float | None, delay_s: float
) -> None:
    row, before = _Row(), utcnow()
    follow_up = lifecycle.defer(CHARGE, row, NotSent("x" * 600, retry_after_s))
    assert row.next_attempt_at is not None and row.last_error == "x" * 500
    waits = (row.next_attempt_at - before).total_seconds()
    assert delay_s <= waits <= delay_s * 1.3 + 1  # SEND_DEFER_S is 15 without one
    follow_up()
    assert _scheduled(app_ctx) == [f"charge-41-at-{int(row.next_attempt_at.timestamp())}"]


def test_a_lookup_waits_longer_each_time_and_goes_to_review_with_the_reason(
    app_ctx: Flask,
) -> None:
    moves, before = _Moves(), utcnow()
    row = _Row(first_sent_at=before, reconcile_attempts=1, last_error="read timeout")
    follow_up = lifecycle.schedule_lookup(_as(CHARGE, moves), row)
    delays = settings().reconcile.delays_s
    assert row.next_reconcile_at is not None and moves.asked == []
    waits = (row.next_reconcile_at - before).total_seconds()
    assert delays[1] <= waits <= delays[1] * 1.2 + 1
    follow_up()
    assert _scheduled(app_ctx) == ["reconcile-41-1"]
    spent = _Row(first_sent_at=before, reconcile_attempts=settings().reconcile.max_attempts)
    assert lifecycle.schedule_lookup(_as(CHARGE, moves), spent) is lifecycle.nothing
    deadline = lifecycle.key_deadline(spent)
    assert deadline is not None and spent.next_reconcile_at is None
    assert moves.asked == [
        (
            PaymentStatus.NEEDS_REVIEW,
            "reconcile",
            f"outcome still unknown after {spent.reconcile_attempts} lookups; the provider "
            f"forgets the key at {deadline:%Y-%m-%d %H:%M} UTC; last answer: none",
        )
    ]


def test_a_lookup_after_the_keys_deadline_goes_to_review_now(app_ctx: Flask) -> None:
    moves = _Moves()
    window_s = provider_for("stripe").capabilities.replay_window_s
    assert window_s is not None
    sent = utcnow() - timedelta(seconds=window_s - 30)  # the next lookup (60 s) is too late
    row = _Row(first_sent_at=sent)
    assert lifecycle.key_deadline(row) == sent + timedelta(seconds=window_s)
    lifecycle.schedule_lookup(_as(CHARGE, moves), row)
    assert [to for to, _, _ in moves.asked] == [PaymentStatus.NEEDS_REVIEW]
    assert lifecycle.key_deadline(_Row()) is None  # never sent: no key to forget
    keyless = _Row(provider="braintree", first_sent_at=sent, reconcile_attempts=99)
    assert lifecycle.key_deadline(keyless) is None
    lifecycle.schedule_lookup(_as(REFUND, moves), keyless)
    assert moves.asked[-1][2] == "refund still unknown after 99 lookups; last answer: none"


def test_a_lookups_answer_is_judged_the_same_for_every_kind(app_ctx: Flask) -> None:
    moves = _Moves()
    applied: list[str] = []

    def apply() -> lifecycle.FollowUp:
        applied.append("applied")
        return lifecycle.nothing

    refused = NotSent(CIRCUIT_OPEN, retry_after_s=30)
    row, before = _Row(reconcile_attempts=2), utcnow()
    lifecycle.judge_lookup(_as(CHARGE, moves, apply), row, refused)()
    assert row.next_reconcile_at is not None and row.reconcile_attempts == 2  # not spent
    assert 30 <= (row.next_reconcile_at - before).total_seconds() <= 30 * 1.2 + 1
    assert _scheduled(app_ctx) == ["reconcile-41-2-deferred"]
    absent = _Row()
    gone = lifecycle.judge_lookup(_as(CHARGE, moves, apply), absent, Absent("no such intent"))
    assert gone is lifecycle.nothing and moves.rows == [absent]
    assert moves.asked == [
        (PaymentStatus.FAILED, "reconcile", "provider has no record of the payment: no such intent")
    ]
    lifecycle.judge_lookup(_as(CHARGE, moves, apply), _Row(status=PaymentStatus.PENDING), refused)
    lifecycle.judge_lookup(_as(REFUND, moves, apply), _Row(), NotSent("connect refused"))
    assert applied == ["applied", "applied"]  # refused but not unknown; not the breaker's
    spent = _Row(first_sent_at=utcnow(), reconcile_attempts=settings().reconcile.max_attempts)
    lifecycle.judge_lookup(_as(CHARGE, moves, apply), spent, refused)  # refused, and out of lookups
    assert moves.rows[-1] is spent and moves.asked[-1][0] == PaymentStatus.NEEDS_REVIEW


def test_a_mismatch_is_counted_once_by_provider_and_source(app_ctx: Flask) -> None:
    metric = REPORT_MISMATCHES.labels("braintree", "charge")
    before = metric._value.get()
    counted = (day_counts.today_counts(day_counts.REPORT_MISMATCHES) or [0])[0]
    lifecycle.count_mismatch("braintree", "charge")
    assert metric._value.get() == before + 1
    assert day_counts.today_counts(day_counts.REPORT_MISMATCHES) == [counted + 1]


def test_a_refunds_lookup_is_counted_as_a_charges_is(app: Flask, sandbox: Any) -> None:
    """Issue 49 (a): refund lookups were not counted in reconcile_attempts_total."""
    refund_id = _refund(app)
    with app.app_context():
        send_refund(refund_id)
        row = db.session.get(Refund, refund_id)
        assert row is not None
        row.status = RefundStatus.UNKNOWN  # as if its answer had been lost
        db.session.commit()
    counted = RECONCILE_ATTEMPTS.labels("stripe", REFUND.name)
    before = counted._value.get()
    with app.app_context():
        reconcile_refund(refund_id)
    assert counted._value.get() == before + 1
    assert _get(app, refund_id).reconcile_attempts == 1
    assert _get(app, refund_id).status == RefundStatus.SUCCEEDED


def test_a_send_deferred_again_within_its_own_second_gets_a_job_of_its_own(
    app_ctx: Flask,
) -> None:
    """RQ runs a deferred job up to a second early; an open breaker with half a second
    left defers it again, into the second its own id names. The enqueue took that id,
    still running, for a job already waiting: the payment was never sent (16 of 360
    payments pending for minutes in bench.settle's customers at 100 a second)."""
    due = utcnow() + timedelta(seconds=0.3)
    row = _Row(status=PaymentStatus.PENDING, next_attempt_at=due)
    connection = Redis.from_url(app_ctx.config["REDIS_URL"])
    running = Queue(provider_queue_name("stripe"), connection=connection).enqueue(
        "jobs.movements.send_job", "charge", 41, job_id=f"charge-41-at-{int(due.timestamp())}"
    )
    running.set_status(JobStatus.STARTED)  # this job is the one deferring

    lifecycle.defer(CHARGE, row, NotSent("circuit open", retry_after_s=0.05))()

    assert row.next_attempt_at is not None and row.next_attempt_at > due
    assert _scheduled(app_ctx) == [f"charge-41-at-{int(due.timestamp()) + 1}"]
