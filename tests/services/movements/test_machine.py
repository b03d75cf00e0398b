"""The one state machine's rules, the same for every kind's table: shown on disputes
(a forward-only table) and refunds (a table with a provider's reversal)."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import (
    Dispute,
    DisputeStatus,
    DisputeTransition,
    PaymentStatus,
    Refund,
    RefundStatus,
    RefundTransition,
    TransitionSource,
)
from services.disputes.state import TABLE as DISPUTES
from services.movements import machine
from services.payments.state import TABLE as PAYMENTS
from services.refunds.state import TABLE as REFUNDS
from tests.factories import make_customer, make_dispute, make_order, make_payment, make_refund

WEBHOOK, ADMIN = TransitionSource.WEBHOOK, TransitionSource.ADMIN
RECONCILE = TransitionSource.RECONCILE


def _dispute(status: DisputeStatus) -> Dispute:
    return make_dispute(make_payment(make_order(make_customer())), status)


def _trail(dispute: Dispute) -> list[tuple[str | None, str, str, str | None, str]]:
    db.session.flush()
    return [
        (t.from_status, t.to_status, t.source, t.actor, t.reason)
        for t in db.session.scalars(
            select(DisputeTransition)
            .where(DisputeTransition.dispute_id == dispute.id)
            .order_by(DisputeTransition.id)
        )
    ]


def test_a_move_in_the_table_is_taken_and_recorded_with_who_and_why(app_ctx: Flask) -> None:
    dispute = _dispute(DisputeStatus.NEEDS_RESPONSE)
    taken = machine.step(
        DISPUTES, dispute, DisputeStatus.UNDER_REVIEW, source=WEBHOOK, reason="r1", actor="evt_1"
    )
    assert taken == machine.Step(
        DisputeStatus.NEEDS_RESPONSE, DisputeStatus.UNDER_REVIEW, False, "r1"
    )
    assert dispute.status == DisputeStatus.UNDER_REVIEW
    assert _trail(dispute) == [("needs_response", "under_review", "webhook", "evt_1", "r1")]


def test_a_decided_step_is_written_only_when_taken(app_ctx: Flask) -> None:
    dispute = _dispute(DisputeStatus.NEEDS_RESPONSE)
    taken = machine.decide(
        DISPUTES, dispute, DisputeStatus.UNDER_REVIEW, source=WEBHOOK, reason="r"
    )
    assert taken is not None
    assert dispute.status == DisputeStatus.NEEDS_RESPONSE and _trail(dispute) == []
    machine.take(DISPUTES, dispute, taken, source=WEBHOOK, actor="evt_2")
    assert dispute.status == DisputeStatus.UNDER_REVIEW
    assert _trail(dispute) == [("needs_response", "under_review", "webhook", "evt_2", "r")]


@pytest.mark.parametrize(
    ("start", "to"),
    [
        (DisputeStatus.UNDER_REVIEW, DisputeStatus.NEEDS_RESPONSE),  # an older report
        (DisputeStatus.UNDER_REVIEW, DisputeStatus.UNDER_REVIEW),  # the same one again
        (DisputeStatus.WON, DisputeStatus.UNDER_REVIEW),  # closed: never reopened
    ],
)
def test_a_move_not_in_the_table_changes_and_records_nothing(
    app_ctx: Flask, start: DisputeStatus, to: DisputeStatus
) -> None:
    dispute = _dispute(start)
    assert machine.step(DISPUTES, dispute, to, source=WEBHOOK, reason="late") is None
    assert dispute.status == start and _trail(dispute) == []


def test_two_different_final_reports_conflict_and_go_to_review(app_ctx: Flask) -> None:
    dispute = _dispute(DisputeStatus.WON)
    taken = machine.step(DISPUTES, dispute, DisputeStatus.LOST, source=WEBHOOK, reason="evt_9")
    assert taken is not None and taken.to == DisputeStatus.NEEDS_REVIEW
    [(_, to, _, _, reason)] = _trail(dispute)
    assert to == "needs_review"
    assert reason == "conflict: dispute was won, webhook reports lost: evt_9"


def test_review_records_what_it_is_told_and_only_an_admin_decides(app_ctx: Flask) -> None:
    dispute = _dispute(DisputeStatus.NEEDS_REVIEW)
    assert machine.step(DISPUTES, dispute, DisputeStatus.WON, source=WEBHOOK, reason="e") is None
    assert dispute.status == DisputeStatus.NEEDS_REVIEW
    assert _trail(dispute) == [("needs_review", "needs_review", "webhook", None, "reported won: e")]
    taken = machine.step(
        DISPUTES, dispute, DisputeStatus.WON, source=ADMIN, reason="bank letter", actor="ops@x"
    )
    assert taken is not None and dispute.status == DisputeStatus.WON
    assert _trail(dispute)[-1] == ("needs_review", "won", "admin", "ops@x", "bank letter")


def _refund(status: RefundStatus) -> Refund:
    return make_refund(make_payment(make_order(make_customer())), status)


def test_a_reversal_is_the_providers_word_only_and_is_never_undone_by_an_older_report(
    app_ctx: Flask,
) -> None:
    by_admin = _refund(RefundStatus.SUCCEEDED)
    taken = machine.step(REFUNDS, by_admin, RefundStatus.FAILED, source=ADMIN, reason="x")
    assert taken is not None and taken.to == RefundStatus.NEEDS_REVIEW  # a conflict, not a reversal
    refund = _refund(RefundStatus.SUCCEEDED)
    taken = machine.step(REFUNDS, refund, RefundStatus.FAILED, source=WEBHOOK, reason="evt_f")
    reason = "failed after it had succeeded: evt_f"
    assert taken == machine.Step(RefundStatus.SUCCEEDED, RefundStatus.FAILED, True, reason)
    reasons = db.session.scalars(
        select(RefundTransition.reason).where(RefundTransition.refund_id == refund.id)
    ).all()
    assert reasons == [reason]
    stale = machine.step(REFUNDS, refund, RefundStatus.SUCCEEDED, source=WEBHOOK, reason="old")
    assert stale is None and refund.status == RefundStatus.FAILED
    # Without a reversal first, the same report is a conflict.
    failed = _refund(RefundStatus.FAILED)
    taken = machine.step(REFUNDS, failed, RefundStatus.SUCCEEDED, source=WEBHOOK, reason="e")
    assert taken is not None and taken.to == RefundStatus.NEEDS_REVIEW


def test_review_records_who_reported_and_a_move_without_a_reason_records_none(
    app_ctx: Flask,
) -> None:
    dispute = _dispute(DisputeStatus.NEEDS_REVIEW)
    machine.step(DISPUTES, dispute, DisputeStatus.LOST, source=WEBHOOK, reason="e", actor="evt_3")
    assert _trail(dispute) == [
        ("needs_review", "needs_review", "webhook", "evt_3", "reported lost: e")
    ]
    fresh = _dispute(DisputeStatus.NEEDS_RESPONSE)
    machine.step(DISPUTES, fresh, DisputeStatus.UNDER_REVIEW, source=WEBHOOK)
    assert _trail(fresh) == [("needs_response", "under_review", "webhook", None, "")]


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == machine.log.name]


def test_what_was_ignored_and_what_moved_is_logged_whole_after_the_commit(
    app_ctx: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger=machine.log.name)
    dispute = _dispute(DisputeStatus.UNDER_REVIEW)
    machine.step(DISPUTES, dispute, DisputeStatus.NEEDS_RESPONSE, source=WEBHOOK, reason="old")
    assert _lines(caplog) == [
        f"dispute {dispute.id}: ignored under_review -> needs_response from webhook (old)"
    ]
    caplog.clear()
    machine.step(DISPUTES, dispute, DisputeStatus.WON, source=WEBHOOK, reason="evt_w")
    assert _lines(caplog) == []  # not before the commit
    db.session.commit()
    described = f"payment {dispute.payment_id}, {dispute.provider} {dispute.provider_dispute_id}"
    assert _lines(caplog) == [
        f"dispute {dispute.id} ({described}): under_review -> won by webhook: evt_w"
    ]


def test_a_stale_report_after_a_reversal_is_logged(
    app_ctx: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger=machine.log.name)
    refund = _refund(RefundStatus.SUCCEEDED)
    machine.step(REFUNDS, refund, RefundStatus.FAILED, source=WEBHOOK, reason="evt_f")
    db.session.commit()
    caplog.clear()
    machine.step(REFUNDS, refund, RefundStatus.SUCCEEDED, source=WEBHOOK, reason="old")
    assert _lines(caplog) == [f"refund {refund.id}: ignored a stale succeeded report (old)"]


def test_a_moved_line_carries_the_fields_of_every_line_about_its_row(
    app_ctx: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger=machine.log.name)
    payment = make_payment(make_order(make_customer()))
    machine.step(PAYMENTS, payment, PaymentStatus.UNKNOWN, source=RECONCILE, reason="timeout")
    db.session.commit()
    [moved] = [r for r in caplog.records if r.name == machine.log.name]
    fields = vars(moved)
    assert (fields["payment_id"], fields["idempotency_key"], fields["provider"]) == (
        payment.id,
        str(payment.idempotency_key),
        payment.provider,
    )


def test_only_a_reversal_itself_makes_a_later_report_stale(app_ctx: Flask) -> None:
    # Failed without ever succeeding: a later success is a conflict, not a stale report.
    refund = _refund(RefundStatus.PENDING)
    machine.step(REFUNDS, refund, RefundStatus.FAILED, source=WEBHOOK, reason="evt_1")
    taken = machine.step(REFUNDS, refund, RefundStatus.SUCCEEDED, source=WEBHOOK, reason="e")
    assert taken is not None and refund.status == RefundStatus.NEEDS_REVIEW
    # Left succeeded for review (not for failed), then failed by an admin: the same.
    other = _refund(RefundStatus.SUCCEEDED)
    machine.step(REFUNDS, other, RefundStatus.FAILED, source=ADMIN, reason="conflict")
    assert other.status == RefundStatus.NEEDS_REVIEW
    machine.step(REFUNDS, other, RefundStatus.FAILED, source=ADMIN, reason="bank", actor="ops")
    assert other.status == RefundStatus.FAILED
    taken = machine.step(REFUNDS, other, RefundStatus.SUCCEEDED, source=WEBHOOK, reason="e")
    assert taken is not None and other.status == RefundStatus.NEEDS_REVIEW


def test_a_long_reason_is_kept_to_its_column(app_ctx: Flask) -> None:
    dispute = _dispute(DisputeStatus.NEEDS_RESPONSE)
    machine.step(DISPUTES, dispute, DisputeStatus.UNDER_REVIEW, source=WEBHOOK, reason="r" * 600)
    [(_, _, _, _, reason)] = _trail(dispute)
    assert reason == "r" * 500
