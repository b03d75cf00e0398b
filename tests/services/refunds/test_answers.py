"""What a provider's answer means for a refund: checked against it first (all good reads
None, as for a charge), a refund on its way is processing, a contradiction goes to
review and is counted."""

from __future__ import annotations

from flask import Flask

from models import RefundStatus, TransitionSource
from providers.outcomes import Report, Succeeded, Unknown
from services.platform import day_counts
from services.refunds.answers import apply
from services.refunds.kind import REFUND
from tests.factories import make_customer, make_order, make_payment, make_refund


def test_all_good_reads_the_same_for_a_refund_as_for_a_charge(app_ctx: Flask) -> None:
    """Issue 49 (d): a matching answer was '' for refunds and None for payments."""

    from services.payments.answers import mismatch as payment_mismatch
    from services.refunds.answers import mismatch

    payment = make_payment(make_order(make_customer()))
    refund = make_refund(payment, amount_minor=300)
    said = Report(amount_minor=300, currency="EUR", our_id=str(refund.id))
    assert mismatch(refund, "re_1", said) is None
    assert mismatch(refund, None, Report(), is_success=False) is None
    assert mismatch(refund, "re_1", Report(amount_minor=299, currency="EUR")) is not None
    charge = Report(amount_minor=payment.amount_minor, currency="EUR", our_id=str(payment.id))
    assert payment_mismatch(payment, "pi_1", charge, is_success=True) is None


def test_an_answer_for_another_amount_sends_the_refund_to_review_and_counts(
    app_ctx: Flask,
) -> None:
    refund = make_refund(make_payment(make_order(make_customer())), amount_minor=300)
    counted = (day_counts.today_counts(day_counts.REPORT_MISMATCHES) or [0])[0]
    said = Report(amount_minor=3000, currency="EUR", our_id=str(refund.id))
    apply(REFUND, refund, Succeeded("re_1", said), TransitionSource.REFUND)
    assert refund.status == RefundStatus.NEEDS_REVIEW
    assert day_counts.today_counts(day_counts.REPORT_MISMATCHES) == [counted + 1]


def test_a_refund_the_provider_has_on_its_way_is_processing_and_looked_up_later(
    app_ctx: Flask,
) -> None:
    refund = make_refund(make_payment(make_order(make_customer())), amount_minor=300)
    said = Report(amount_minor=300, currency="EUR", our_id=str(refund.id))
    follow_up = apply(
        REFUND,
        refund,
        Unknown("pending", provider_payment_id="re_9", report=said),
        TransitionSource.REFUND,
    )
    assert refund.status == RefundStatus.PROCESSING and refund.provider_refund_id == "re_9"
    assert refund.next_reconcile_at is not None
    follow_up()
