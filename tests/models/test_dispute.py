"""A dispute's table: forward only, closed disputes change only through review."""

from __future__ import annotations

from models import DISPUTE_TRANSITIONS, FUNDS_WITHDRAWN, DisputeStatus
from models.dispute import DISPUTE_CLOSED


def test_every_status_has_its_moves_and_closed_ones_only_go_to_review() -> None:
    assert set(DISPUTE_TRANSITIONS) == set(DisputeStatus)
    for status in DISPUTE_CLOSED:
        assert DISPUTE_TRANSITIONS[status] == {DisputeStatus.NEEDS_REVIEW}
    assert DISPUTE_TRANSITIONS[DisputeStatus.NEEDS_REVIEW] == {
        DisputeStatus.WON,
        DisputeStatus.LOST,
    }


def test_no_move_goes_back_to_an_earlier_stage() -> None:
    assert DisputeStatus.NEEDS_RESPONSE not in DISPUTE_TRANSITIONS[DisputeStatus.UNDER_REVIEW]
    assert (
        DisputeStatus.WARNING_NEEDS_RESPONSE
        not in DISPUTE_TRANSITIONS[DisputeStatus.NEEDS_RESPONSE]
    )
    # an inquiry may become a chargeback
    assert DisputeStatus.NEEDS_RESPONSE in DISPUTE_TRANSITIONS[DisputeStatus.WARNING_NEEDS_RESPONSE]


def test_money_is_out_only_for_chargebacks_not_won() -> None:
    assert {
        DisputeStatus.NEEDS_RESPONSE,
        DisputeStatus.UNDER_REVIEW,
        DisputeStatus.LOST,
    } == FUNDS_WITHDRAWN
    assert not any(status.value.startswith("warning_") for status in FUNDS_WITHDRAWN)
    assert DisputeStatus.LOST.is_open is False and DisputeStatus.UNDER_REVIEW.is_open


def test_an_inquiry_holds_no_funds_whatever_its_status() -> None:
    from models import Dispute

    lost_chargeback = Dispute(status=DisputeStatus.LOST, is_inquiry=False)
    lost_inquiry = Dispute(status=DisputeStatus.LOST, is_inquiry=True)
    won_chargeback = Dispute(status=DisputeStatus.WON, is_inquiry=False)
    assert lost_chargeback.holds_funds
    assert not lost_inquiry.holds_funds and not won_chargeback.holds_funds
