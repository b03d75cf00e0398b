"""The daily reconciliation against the sandbox's balance over HTTP: our charges and
refunds matched, the provider's fees and payouts booked, a payout's contents checked,
and each planted discrepancy found and named; a second run posts nothing twice."""

from __future__ import annotations

import uuid
from datetime import date, timedelta
from typing import Any

import pytest
import stripe
from flask import Flask
from sqlalchemy import select

from extensions import db
from models import (
    Account,
    Alert,
    AlertKind,
    DayStatus,
    Dispute,
    DisputeStatus,
    ItemOutcome,
    JournalEntry,
    Payment,
    PayoutStatus,
    ProviderPayout,
    RefundStatus,
    Source,
    SourceKind,
    TransitionSource,
)
from models.types import utcnow
from providers.outcomes import BalanceTxn
from services.books import journal
from services.disputes.state import move_dispute
from services.platform.locales import money_text
from services.refunds.issue import refund_payment
from services.refunds.state import move_refund
from services.statements import reconcile
from services.statements.provider_balance import BalanceUnreadable
from tests.factories import make_dispute
from tests.helpers import (
    charge_payment,
    charged,
    committed_payment,
    committed_topup,
    got,
    send_refund,
)
from tests.sandbox_support import sdk_charge

DAY = 86400
WEBHOOK = TransitionSource.WEBHOOK


def _today() -> date:
    return utcnow().date()


def _charged(app: Flask, count: int) -> list[int]:
    ids = [committed_payment(app) for _ in range(count)]
    with app.app_context():
        for payment_id in ids:
            charge_payment(payment_id)
    return ids


def _refunded(app: Flask, payment_id: int, amount_minor: int) -> int:
    with app.app_context():
        refund, _ = refund_payment(payment_id, amount_minor, "goodwill", "test", uuid.uuid4())
        send_refund(refund.id)
        return refund.id


def _outcomes(result: reconcile.DayResult) -> list[tuple[str, str]]:
    return sorted((item.outcome.value, item.detail) for item in result.items)


def test_a_day_of_charges_and_a_refund_matches_and_the_fees_are_booked(
    app: Flask, sandbox: Any
) -> None:
    _, second = _charged(app, 2)  # 10.00 EUR each
    _refunded(app, second, 250)
    with app.app_context():
        result = reconcile.reconcile("stripe", _today())
        assert result.status == DayStatus.RECONCILED
        assert [item.outcome for item in result.items].count(ItemOutcome.MATCHED) == 3
        fee = 15 + 25  # 1.5% of 10.00 + 0.25 per charge
        balances = journal.balances()
        assert balances[(Account.fees("stripe"), "EUR")] == 2 * fee
        assert balances[(Account.clearing("stripe"), "EUR")] == 2 * (1000 - fee) - 250
        assert journal.trial_balance() == {"EUR": 0}
        assert db.session.scalars(select(Alert)).all() == []


def test_reconciling_a_day_again_gives_the_same_items_and_posts_nothing_twice(
    app: Flask, sandbox: Any
) -> None:
    _charged(app, 1)
    with app.app_context():
        once = reconcile.reconcile("stripe", _today())
        entries = len(db.session.scalars(select(JournalEntry)).all())
        again = reconcile.reconcile("stripe", _today())
        assert _outcomes(again) == _outcomes(once)
        assert len(db.session.scalars(select(JournalEntry)).all()) == entries
        assert journal.trial_balance() == {"EUR": 0}


def test_each_planted_discrepancy_is_found_and_named(
    app: Flask, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    [ours] = _charged(app, 1)
    outside = sdk_charge(sdk, 4200)  # a charge made in the Dashboard
    sandbox.plant_fee_adjustment(125)
    with app.app_context():
        # An entry of ours the provider never saw (a success booked for nothing).
        journal.post(
            Source(SourceKind.PAYMENT, ours + 1000),
            "succeeded",
            [
                journal.Leg(Account.clearing("stripe"), 700, "EUR"),
                journal.Leg(Account.REVENUE, -700, "EUR"),
            ],
        )
        db.session.commit()
        result = reconcile.reconcile("stripe", _today())
        assert result.status == DayStatus.UNRECONCILED
        found = {(i.outcome, i.theirs, i.ours) for i in result.items}
        assert (ItemOutcome.MATCHED, 1000, 1000) in found
        assert (ItemOutcome.MISSING_AT_OURS, 4200, None) in found
        assert (ItemOutcome.MISSING_AT_OURS, -125, None) in found
        assert (ItemOutcome.MISSING_AT_PROVIDER, None, 700) in found
        assert len(result.items) == 4
        details = " / ".join(i.detail for i in result.items)
        assert f"({outside.id}): no movement of ours" in details
        assert "adjustment (fee)" in details
        assert f"payment {ours + 1000} succeeded: not in stripe's balance" in details
        alerts = db.session.scalars(select(Alert)).all()  # one per discrepancy
        assert {a.kind for a in alerts} == {AlertKind.BOOKS_UNRECONCILED}
        assert sorted(a.dedupe_key.split(":")[3] for a in alerts) == [
            "missing_at_ours",
            "missing_at_ours",
            "missing_at_provider",
        ]
        assert all("What to do: " in a.detail for a in alerts)
        reconcile.reconcile("stripe", _today())  # found again: alerted already
        assert len(db.session.scalars(select(Alert)).all()) == 3


def test_an_amount_that_differs_is_named_with_both_sides(
    app: Flask, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    """Ours booked 10.00 for a PaymentIntent the provider charged 9.99 for."""
    intent = sdk_charge(sdk, 999)
    payment_id = committed_payment(app, provider_payment_id=intent.id)
    with app.app_context():
        journal.post(
            Source(SourceKind.PAYMENT, payment_id),
            "succeeded",
            [
                journal.Leg(Account.clearing("stripe"), 1000, "EUR"),
                journal.Leg(Account.REVENUE, -1000, "EUR"),
            ],
        )
        db.session.commit()
        [item] = reconcile.reconcile("stripe", _today()).items
        assert (item.outcome, item.theirs, item.ours) == (ItemOutcome.AMOUNT_DIFFERS, 999, 1000)
        assert f"payment {payment_id} moved €10.00, theirs €9.99" in item.detail


def test_payouts_are_booked_to_the_bank_and_their_contents_checked(
    app: Flask, sandbox: Any
) -> None:
    _charged(app, 2)
    sandbox.age_balance(2 * DAY)  # the charges were made two days ago, now available
    [refused] = sandbox.pay_out(fail=True)
    [paid] = sandbox.pay_out()
    two_days_ago = _today() - timedelta(days=2)
    with app.app_context():
        earlier = reconcile.reconcile("stripe", two_days_ago)
        assert earlier.count(ItemOutcome.MATCHED) == 2 and earlier.status == DayStatus.RECONCILED
        today = reconcile.reconcile("stripe", _today())
        assert today.status == DayStatus.RECONCILED, _outcomes(today)
        assert [i.outcome for i in today.items] == [ItemOutcome.BOOKED] * 3
        net = 2 * (1000 - 40)
        assert paid["amount"] == refused["amount"] == net
        balances = journal.balances()
        assert balances[(Account.bank("stripe"), "EUR")] == net  # one out, back, out again
        assert balances[(Account.clearing("stripe"), "EUR")] == 0
        assert journal.trial_balance() == {"EUR": 0}


def test_a_payout_whose_events_said_another_amount_is_named_and_not_booked(
    app: Flask, sandbox: Any
) -> None:
    _charged(app, 1)
    sandbox.age_balance(2 * DAY)
    [paid] = sandbox.pay_out()
    with app.app_context():  # what its payout.paid event would have said, were it wrong
        db.session.add(
            ProviderPayout(
                provider="stripe",
                payout_id=paid["id"],
                amount_minor=paid["amount"] + 1,
                currency="EUR",
                status=PayoutStatus.PAID,
                event_created_at=utcnow(),
            )
        )
        db.session.commit()
        reconcile.reconcile("stripe", _today() - timedelta(days=2))  # the charge's day
        today = reconcile.reconcile("stripe", _today())
        assert today.status == DayStatus.UNRECONCILED
        assert _outcomes(today) == [
            (
                "payout_differs",
                f"payout {paid['id']} of {money_text(paid['amount'], 'EUR')}: its events said "
                f"{money_text(paid['amount'] + 1, 'EUR')}",
            )
        ]
        assert (Account.bank("stripe"), "EUR") not in journal.balances()


def test_a_top_up_refund_undone_before_the_provider_had_it_is_missing_nowhere(
    app: Flask, sandbox: Any
) -> None:
    """Taken from the wallet when requested, then refused before it reached the provider:
    its two entries moved the clearing account out and back on our side alone."""
    topup_id = committed_topup(app, amount_minor=700)
    with app.app_context():
        charge_payment(topup_id)
        refund, _ = refund_payment(topup_id, 300, "changed their mind", "ops", uuid.uuid4())
        assert move_refund(refund, RefundStatus.FAILED, source=TransitionSource.REFUND)
        db.session.commit()
        assert list(journal.entries_of(Source(SourceKind.REFUND, refund.id))) == ["taken", "failed"]
        today = reconcile.reconcile("stripe", _today())
        assert today.status == DayStatus.RECONCILED, _outcomes(today)
        assert [i.outcome for i in today.items] == [ItemOutcome.MATCHED]


def test_a_provider_that_cannot_be_asked_stores_nothing(app: Flask, sandbox: Any) -> None:
    sandbox.add_fault("error", status=500, dialect="stripe", endpoint="balance_transactions")
    with app.app_context():
        with pytest.raises(BalanceUnreadable):
            reconcile.reconcile("stripe", _today())
        assert not reconcile.is_reconciled("stripe", _today())


def test_a_chargeback_won_matches_both_ways_and_its_fee_is_booked(
    app: Flask, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    payment_id = charged(app, committed_payment(app, payment_method="pm_card_createDispute"))
    with app.app_context():
        payment = got(Payment, payment_id)
        intent = str(payment.provider_payment_id)
        [theirs] = sdk.v1.disputes.list(params={"payment_intent": intent}).data
        ours = make_dispute(payment, DisputeStatus.WARNING_NEEDS_RESPONSE)
        ours.provider_dispute_id = theirs.id
        move_dispute(ours, payment, DisputeStatus.NEEDS_RESPONSE, source=WEBHOOK, reason="t")
        db.session.commit()
        dispute_id = ours.id
        withdrawn = reconcile.reconcile("stripe", _today())
        assert withdrawn.status == DayStatus.RECONCILED, _outcomes(withdrawn)
        assert withdrawn.count(ItemOutcome.MATCHED) == 2  # the charge and the withdrawal
    sdk.v1.disputes.update(
        theirs.id, params={"evidence": {"uncategorized_text": "winning_evidence"}}
    )
    with app.app_context():
        payment = got(Payment, payment_id)
        ours = got(Dispute, dispute_id)
        move_dispute(ours, payment, DisputeStatus.WON, source=WEBHOOK, reason="t")
        db.session.commit()
        won = reconcile.reconcile("stripe", _today())
        assert won.status == DayStatus.RECONCILED, _outcomes(won)
        assert won.count(ItemOutcome.MATCHED) == 3
        balances = journal.balances()
        assert balances[(Account.fees("stripe"), "EUR")] == 40 + 2000  # the dispute fee stays
        assert balances[(Account.DISPUTES, "EUR")] == 0
        assert journal.trial_balance() == {"EUR": 0}


@pytest.mark.parametrize(
    ("field", "value", "outcome", "named"),
    [
        ("currency", "usd", ItemOutcome.CURRENCY_DIFFERS, "in EUR, theirs in USD"),
        ("amount", 1, ItemOutcome.UNREADABLE, "net is not amount less fee"),
    ],
)
def test_an_answer_that_does_not_add_up_moves_nothing_and_is_named(
    app: Flask, sandbox: Any, field: str, value: object, outcome: ItemOutcome, named: str
) -> None:
    """A hostile or broken provider's answer (the sandbox's tamper fault)."""
    _charged(app, 1)
    sandbox.add_fault("tamper", field=field, value=value, endpoint="balance_transactions")
    with app.app_context():
        items = reconcile.reconcile("stripe", _today()).items
        [theirs] = [i for i in items if i.outcome == outcome]
        assert named in theirs.detail
        assert Account.fees("stripe") not in {a for a, _ in journal.balances()}  # no fee booked


def test_a_payout_whose_contents_do_not_sum_to_it_is_named() -> None:
    def txn(kind: str, amount: int, fee: int = 0) -> BalanceTxn:
        return BalanceTxn(
            f"txn_{kind}_{amount}", kind, kind, "po_1", None, amount, fee, "EUR", None
        )

    payout = txn("payout", -1920)
    inside = [txn("charge", 1000, 40), txn("charge", 1000, 40), payout]
    assert reconcile.payout_item(payout, inside).outcome == ItemOutcome.BOOKED
    short = reconcile.payout_item(payout, inside[1:])
    assert (short.outcome, short.ours, short.theirs) == (ItemOutcome.PAYOUT_DIFFERS, 960, -1920)
    assert "payout po_1 of €19.20: its contents sum to €9.60" in short.detail


def test_a_payout_asked_for_by_hand_is_booked_by_its_own_transaction(
    app: Flask, sandbox: Any, sdk: stripe.StripeClient
) -> None:
    """Stripe lists no contents of a manual payout (`?payout=` is refused): it is paid
    from the available balance, so it is booked as its balance transaction says, and the
    day's balance against Stripe's shows it was all there."""
    _charged(app, 1)
    sandbox.age_balance(2 * DAY)
    manual = sdk.v1.payouts.create(params={"amount": 500, "currency": "eur"})
    with app.app_context():
        reconcile.reconcile("stripe", _today() - timedelta(days=2))
        today = reconcile.reconcile("stripe", _today())
        assert today.status == DayStatus.RECONCILED, _outcomes(today)
        [payout] = today.items
        assert f"payout {manual.id} asked for by hand" in payout.detail
        balances = journal.balances()
        assert balances[(Account.bank("stripe"), "EUR")] == 500
        assert balances[(Account.clearing("stripe"), "EUR")] == 1000 - 40 - 500
