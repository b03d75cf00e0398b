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
    Refund,
    RefundStatus,
    RefundTransition,
    TransitionSource,
)
from services.disputes.state import TABLE as DISPUTES
from services.movements import machine
from services.refunds.state import TABLE as REFUNDS
from tests.factories import make_customer, make_dispute, make_order, make_payment, make_refund

WEBHOOK, ADMIN = TransitionSource.WEBHOOK, TransitionSource.ADMIN


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
    assert taken == machine.Step(DisputeStatus.NEEDS_RESPONSE, DisputeStatus.UNDER_REVIEW, False)
    assert dispute.status == DisputeStatus.UNDER_REVIEW
    assert _trail(dispute) == [("needs_response", "under_review", "webhook", "evt_1", "r1")]


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
    assert taken == machine.Step(RefundStatus.SUCCEEDED, RefundStatus.FAILED, True)
    reasons = db.session.scalars(
        select(RefundTransition.reason).where(RefundTransition.refund_id == refund.id)
    ).all()
    assert reasons == ["failed after it had succeeded: evt_f"]
    stale = machine.step(REFUNDS, refund, RefundStatus.SUCCEEDED, source=WEBHOOK, reason="old")
    assert stale is None and refund.status == RefundStatus.FAILED
    # Without a reversal first, the same report is a conflict.
    failed = _refund(RefundStatus.FAILED)
    taken = machine.step(REFUNDS, failed, RefundStatus.SUCCEEDED, source=WEBHOOK, reason="e")
    assert taken is not None and taken.to == RefundStatus.NEEDS_REVIEW
