"""`flask books trial-balance`: every account's balance, exit 1 unless they sum to zero;
`flask books rebuild-check`: wallets and orders from postings alone, exit 1 on a difference;
`flask books reconcile --date`: the day's job on the provider's queue, waited for."""

from __future__ import annotations

import threading
from typing import Any

from flask import Flask
from sqlalchemy import Engine, text

from extensions import db
from models import Account, Source, SourceKind
from models.types import utcnow
from services.books import journal
from services.books.journal import Leg
from tests.factories import make_customer, make_order
from tests.helpers import charge_payment, committed_payment, new_wallet, queued_job_ids, run_jobs
from tests.sandbox_support import wait_for


def test_the_trial_balance_lists_every_account_and_exits_by_the_sum(
    app: Flask, runner: Any, owner_engine: Engine
) -> None:
    with app.app_context():
        legs = [Leg(Account.clearing("stripe"), 1400, "EUR"), Leg(Account.REVENUE, -1400, "EUR")]
        journal.post(Source(SourceKind.PAYMENT, 1), "succeeded", legs)
        db.session.commit()
    clean = runner.invoke(args=["books", "trial-balance"])
    assert clean.exit_code == 0, clean.output
    lines = clean.output.splitlines()
    assert lines[0].split() == ["clearing:stripe", "EUR", "€14.00"]
    assert lines[1].split() == ["revenue", "EUR", "-€14.00"]
    assert lines[-1] == "trial balance: zero"
    # A posting written past the database's check by its owner (a restore gone wrong).
    with owner_engine.begin() as conn:
        conn.execute(text("ALTER TABLE postings DISABLE TRIGGER postings_balanced"))
        conn.execute(
            text(
                "INSERT INTO postings (entry_id, account, amount_minor, currency) "
                "SELECT id, 'revenue', -1, 'EUR' FROM journal_entries"
            )
        )
        conn.execute(text("ALTER TABLE postings ENABLE TRIGGER postings_balanced"))
    broken = runner.invoke(args=["books", "trial-balance"])
    assert broken.exit_code == 1
    assert broken.output.splitlines()[-1] == "trial balance: broken {'EUR': -1}"


def test_the_rebuild_check_says_what_differs_and_exits_by_it(app: Flask, runner: Any) -> None:
    wallet_id = new_wallet(app, 1500)
    with app.app_context():
        order = make_order(make_customer())
        db.session.commit()
        order_id = order.id
    clean = runner.invoke(args=["books", "rebuild-check"])
    assert clean.exit_code == 0, clean.output
    assert clean.output.splitlines() == ["rebuild check: 1 wallets, 1 orders, 0 mismatches"]
    with app.app_context():  # the tables changed behind the books' back
        db.session.execute(text("UPDATE wallets SET balance_minor = 1400"))
        db.session.execute(text("UPDATE orders SET status = 'paid'"))
        db.session.commit()
    broken = runner.invoke(args=["books", "rebuild-check"])
    assert broken.exit_code == 1
    assert broken.output.splitlines() == [
        f"wallet {wallet_id}: balance €14.00, its account owes €15.00",
        f"order {order_id} is paid, the books say it was never paid",
        "rebuild check: 1 wallets, 1 orders, 2 mismatches",
    ]


def _reconciled_by_a_worker(app: Flask, runner: Any, day: str) -> Any:
    """The command, run while a worker of the stripe queue takes its job."""
    done: list[Any] = []
    thread = threading.Thread(
        target=lambda: done.append(runner.invoke(args=["books", "reconcile", "--date", day]))
    )
    thread.start()
    wait_for(lambda: bool(queued_job_ids(app)), timeout_s=10)
    run_jobs(app)
    thread.join(timeout=30)
    return done[0]


def test_reconcile_runs_the_day_on_the_providers_queue_and_prints_what_to_look_at(
    app: Flask, runner: Any, sandbox: Any
) -> None:
    [payment_id] = [committed_payment(app)]
    with app.app_context():
        charge_payment(payment_id)
    today = utcnow().date().isoformat()
    clean = _reconciled_by_a_worker(app, runner, today)
    assert clean.exit_code == 0, clean.output
    assert clean.output.splitlines()[:2] == [
        f"stripe {today}: reconciled, 1 matched or booked, 0 to look at",
        "fees EUR €0.40",
    ]
    sandbox.plant_fee_adjustment(125)
    red = _reconciled_by_a_worker(app, runner, today)
    assert red.exit_code == 1, red.output
    assert "unreconciled, 1 matched or booked, 1 to look at" in red.output
    assert "missing_at_ours" in red.output and "theirs -€1.25" in red.output


def test_reconcile_says_so_when_no_worker_runs_it_and_refuses_bad_input(
    app: Flask, runner: Any
) -> None:
    waited = runner.invoke(args=["books", "reconcile", "--date", "2026-12-01", "--wait-s", "0.3"])
    assert waited.exit_code == 2
    assert "not run within 0.3 s (is a worker on the stripe queue?)" in waited.output
    for bad in (["--date", "2026-13-01"], ["--date", "yesterday"], ["--provider", "paypal"]):
        refused = runner.invoke(args=["books", "reconcile", "--date", "2026-12-01", *bad])
        assert refused.exit_code == 2 and "Invalid value" in refused.output
