"""The chaos drill's books: after the traffic settles, simulated days pass at the
provider (its balance aged a day at a time), its payouts run (one refused by the bank,
then paid again), one discrepancy of each kind is planted (a charge made outside the
shop, a fee adjustment we did not expect), and every day is reconciled through
`flask books reconcile` on the provider's queue, as an operator would.

Then: every provider balance transaction is matched or booked but the planted ones and
those of movements a person must decide (a payment in review, named with its status);
the trial balance is zero in every currency; `flask books rebuild-check` passes; each
payout the provider made is booked, and its events said what its balance did."""

from __future__ import annotations

import time
import uuid
from datetime import UTC, date, datetime, timedelta
from typing import Any

import requests

from bench.drills.stack import Stack, Sweeper

DAY_S = 86_400
AUTH = {"Authorization": "Bearer sk_test_sandbox"}
PLANTED_FEE = 125  # the fee adjustment, in minor units
DECIDING = ("needs_review", "unknown", "pending", "processing", "requires_action")


def books_days(stack: Stack, sweeper: Sweeper, days: int = 3) -> dict[str, Any]:
    """Plant, let `days` days pass with payouts, reconcile each, check; the findings."""
    sandbox = stack.sandbox_url
    outside = _charge_outside_the_shop(sandbox)
    _post(sandbox, "/_sandbox/stripe/fee_adjustments", {"amount": PLANTED_FEE, "currency": "eur"})
    payouts: list[dict[str, Any]] = []
    for n in range(days):
        _post(sandbox, "/_sandbox/stripe/balance/age", {"seconds": DAY_S})
        payouts += _post(sandbox, "/_sandbox/stripe/payouts", {"fail": n == days - 2})["data"]
    payouts += _post(sandbox, "/_sandbox/stripe/payouts", {})["data"]  # the refused one, again
    today = datetime.now(UTC).date()
    results: dict[str, Any] = {"payouts": len(payouts), "days": {}, "unmatched": []}
    violations: list[str] = []
    for day in (today - timedelta(days=d) for d in range(days, -1, -1)):
        code, output = sweeper.cli(
            "books", "reconcile", "--date", day.isoformat(), "--wait-s", "120"
        )
        if code == 2:
            violations.append(f"books: {day} was not reconciled: {output.strip()[-300:]}")
        results["days"][day.isoformat()] = output.splitlines()[0] if output else ""
        results["unmatched"] += _unmatched(sweeper, day)
    planted = [f"charge {outside}", "adjustment (fee)"]
    for item in results["unmatched"]:
        if any(p in item for p in planted) or any(f" is {s}," in item for s in DECIDING):
            continue
        violations.append(f"books: unmatched {item}")
    for p in planted:
        if not any(p in item for item in results["unmatched"]):
            violations.append(f"books: the planted {p} was not found")
    trial_code, trial = sweeper.cli("books", "trial-balance")
    if trial_code != 0:
        violations.append(f"books: {trial.strip().splitlines()[-1]}")
    rebuild_code, rebuilt = sweeper.cli("books", "rebuild-check")
    if rebuild_code != 0:
        violations.append(f"books: {rebuilt.strip()[-500:]}")
    violations += _payouts_booked(sweeper, payouts)
    results["trial_balance"] = trial.strip().splitlines()[-1] if trial.strip() else ""
    results["rebuild_check"] = rebuilt.strip().splitlines()[-1] if rebuilt.strip() else ""
    results["violations"] = violations
    return results


def _post(sandbox: str, path: str, body: dict[str, Any]) -> Any:
    answer = requests.post(f"{sandbox}{path}", json=body, timeout=30)
    answer.raise_for_status()
    return answer.json()


def _charge_outside_the_shop(sandbox: str) -> str:
    """A charge made in the provider's Dashboard: no payment of ours; its charge's id."""
    answer = requests.post(
        f"{sandbox}/v1/payment_intents",
        data={
            "amount": "2500",
            "currency": "eur",
            "confirm": "true",
            "payment_method": "pm_card_visa",
            "allowed_payment_method_types[]": "card",
        },
        headers={**AUTH, "Idempotency-Key": str(uuid.uuid4())},
        timeout=30,
    )
    answer.raise_for_status()
    return str(answer.json()["latest_charge"])


def _unmatched(sweeper: Sweeper, day: date) -> list[str]:
    """The day's items other than matched or booked, as `outcome: detail`."""
    from extensions import db
    from services.statements import days
    from services.statements.reconcile import AGREEING

    with sweeper.app.app_context():
        found = days.day_of("stripe", day)
        items = days.items_of(found.id) if found is not None else []
        listed = [f"{i.outcome.value}: {i.detail}" for i, _ in items if i.outcome not in AGREEING]
        db.session.remove()
    return listed


def _payouts_booked(sweeper: Sweeper, payouts: list[dict[str, Any]]) -> list[str]:
    """Each payout posted to the bank account, and as its events told it. The sweeps run
    meanwhile, as the scheduler runs them in production: an event whose doorbell's job
    died with a killed worker (its bell still rung) is applied by the pending-event retry."""
    found: list[str] = []
    deadline = time.monotonic() + 60  # their events are delivered and applied meanwhile
    while time.monotonic() < deadline:
        sweeper.tick()
        found = _payouts_as_told(sweeper, payouts)
        if not found:
            break
        time.sleep(1)
    return found


def _payouts_as_told(sweeper: Sweeper, payouts: list[dict[str, Any]]) -> list[str]:
    from sqlalchemy import select

    from extensions import db
    from models import JournalEntry, ProviderBalanceTxn, ProviderPayout, SourceKind

    found = []
    with sweeper.app.app_context():
        for payout in payouts:
            posted = db.session.scalar(
                select(JournalEntry.id)
                .join(ProviderBalanceTxn, ProviderBalanceTxn.id == JournalEntry.source_id)
                .where(
                    JournalEntry.source_kind == SourceKind.BALANCE,
                    JournalEntry.step == "payout",
                    ProviderBalanceTxn.source_id == payout["id"],
                )
            )
            if posted is None:
                found.append(f"books: payout {payout['id']} not booked")
            told = db.session.scalar(
                select(ProviderPayout).where(ProviderPayout.payout_id == payout["id"])
            )
            if told is None or told.status.value != payout["status"]:
                said = told.status.value if told is not None else "nothing"
                found.append(f"books: payout {payout['id']} is {payout['status']}, events: {said}")
        db.session.remove()
    return found
