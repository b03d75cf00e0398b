"""Our side of a day, found in batches: the movement each of the provider's transactions
stands for by the provider's id, and the clearing posting of its matching step."""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Flask

from models import Account, DisputeStatus, RefundStatus, Source, SourceKind
from providers.outcomes import BalanceTxn
from services.books import journal
from services.statements import ours
from tests.factories import make_customer, make_dispute, make_order, make_payment, make_refund


def _txn(
    kind: str, source_id: str, amount: int, *, ref: str | None = None, category: str = ""
) -> BalanceTxn:
    return BalanceTxn(
        txn_id=f"txn_{source_id}_{category or kind}",
        type=kind,
        category=category or kind,
        source_id=source_id,
        payment_ref=ref,
        amount_minor=amount,
        fee_minor=0,
        currency="EUR",
        created_at=datetime.now(UTC),
    )


def test_each_transaction_finds_its_movement_and_the_step_it_stands_for(app_ctx: Flask) -> None:
    payment = make_payment(make_order(make_customer()))
    payment.provider_payment_id = "pi_ours"
    clearing = Account.clearing("stripe")
    journal.post(
        Source(SourceKind.PAYMENT, payment.id),
        "succeeded",
        [journal.Leg(clearing, 1000, "EUR"), journal.Leg(Account.REVENUE, -1000, "EUR")],
    )
    refund = make_refund(payment, RefundStatus.PENDING, amount_minor=300)
    refund.provider_refund_id = "re_pending"
    dispute = make_dispute(payment, DisputeStatus.NEEDS_RESPONSE, provider_dispute_id="dp_x")
    journal.post(
        Source(SourceKind.DISPUTE, dispute.id),
        "withdrawn:1",
        [journal.Leg(Account.DISPUTES, 1000, "EUR"), journal.Leg(clearing, -1000, "EUR")],
    )
    txns = [
        _txn("charge", "ch_1", 1000, ref="pi_ours"),
        _txn("charge", "ch_2", 500, ref="pi_elsewhere"),
        _txn("refund", "re_pending", -300),
        _txn("adjustment", "dp_x", -1000, category="dispute"),
        _txn("adjustment", "dp_x", 1000, category="dispute_reversal"),
        _txn("payout", "po_1", -700),
    ]
    found = ours.ours_for("stripe", txns)
    charge = found["txn_ch_1_charge"]
    assert charge is not None and (charge.label, charge.amount, charge.currency) == (
        f"payment {payment.id}",
        1000,
        "EUR",
    )
    assert found["txn_ch_2_charge"] is None  # no payment of ours has that PaymentIntent
    assert found["txn_re_pending_refund"] == ours.Ours(f"refund {refund.id}", "pending")
    withdrawn = found["txn_dp_x_dispute"]
    assert withdrawn is not None and (withdrawn.amount, withdrawn.entry_id is not None) == (
        -1000,
        True,
    )
    # Not reinstated in our books: the dispute, without an entry for that step.
    assert found["txn_dp_x_dispute_reversal"] == ours.Ours(
        f"dispute {dispute.id}", "needs_response"
    )
    assert "txn_po_1_payout" not in found and ours.kind_of(txns[-1]) is None


def test_a_refunds_transactions_stand_for_its_steps_whatever_their_generation(
    app_ctx: Flask,
) -> None:
    """A top-up's refund books its money out of the wallet when requested ("taken"); a
    card refund an admin confirmed after it failed is "succeeded:2"."""
    clearing = Account.clearing("stripe")
    refunds = []
    for name, steps in (
        ("re_topup", ["taken"]),
        ("re_again", ["succeeded", "failed", "succeeded:2"]),
    ):
        refund = make_refund(make_payment(make_order(make_customer())), amount_minor=300)
        refund.provider_refund_id = name
        for step in steps:
            sign = 1 if step == "failed" else -1
            journal.post(
                Source(SourceKind.REFUND, refund.id),
                step,
                [
                    journal.Leg(clearing, 300 * sign, "EUR"),
                    journal.Leg(Account.REFUNDS, -300 * sign, "EUR"),
                ],
            )
        refunds.append(refund)
    found = ours.ours_for(
        "stripe",
        [_txn("refund", "re_topup", -300), _txn("refund_failure", "re_again", 300)],
    )
    taken, failed = found["txn_re_topup_refund"], found["txn_re_again_refund_failure"]
    assert taken is not None and (taken.label, taken.amount) == (f"refund {refunds[0].id}", -300)
    assert failed is not None and failed.amount == 300
