"""Emails during the outage drill: the bulkhead, measured. Customers sign up (a welcome
email) and pay orders from their wallets (a receipt) throughout the phases, in-process on
the drill's app, while the card provider hangs; afterwards each email's delivery latency
(outbox row to the SMTP server's acceptance) is read from the outbox, per phase."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from typing import Any

from bench.drills.traffic import PHASES, _percentile


class Emailer:
    """Two emails a second (a welcome and a wallet receipt), each remembered with the
    phase it was caused in."""

    def __init__(self, app: Any, obs: Any, every_s: float = 1.0) -> None:
        self.app, self.obs, self.every_s = app, obs, every_s
        self.caused: dict[tuple[str, int], str] = {}  # (kind, subject id) -> phase
        self.errors = 0
        self.numbers = itertools.count(1)

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self.every_s):
            self._one()

    def _one(self) -> None:
        from extensions import db
        from services.accounts.customers import create_customer
        from services.payments.ordering import create_order
        from services.payments.wallet_orders import pay_order_from_wallet
        from services.wallet import ledger

        phase = self.obs.phase
        with self.app.app_context():
            try:
                number = next(self.numbers)
                customer = create_customer(
                    f"mail-{number}-{uuid.uuid4().hex[:6]}@example.com", "password123", ["EUR"]
                )
                self.caused[("welcome", customer.id)] = phase
                ledger.credit(ledger.wallet_of(customer, "EUR"), 5000, f"fund-{customer.id}")
                order = create_order(customer, {"MUG-001": 1})
                pay_order_from_wallet(customer, order.id, str(uuid.uuid4()))
                self.caused[("wallet_receipt", order.id)] = phase
            except Exception:
                self.errors += 1
            finally:
                db.session.remove()

    def latencies(self) -> dict[str, Any]:
        """Per phase: p50, p99 and the longest delivery in seconds, and how many were
        never delivered (the settle time included)."""
        from sqlalchemy import select

        from extensions import db
        from models import OutboxMessage

        by_phase: dict[str, list[float]] = {p: [] for p in PHASES}
        unsent = dict.fromkeys(PHASES, 0)
        with self.app.app_context():
            rows = db.session.execute(
                select(
                    OutboxMessage.kind,
                    OutboxMessage.subject_id,
                    OutboxMessage.created_at,
                    OutboxMessage.sent_at,
                )
            ).all()
            db.session.remove()
        for kind, subject_id, created_at, sent_at in rows:
            phase = self.caused.get((kind.value, subject_id))
            if phase is None:
                continue
            if sent_at is None:
                unsent[phase] += 1
            else:
                by_phase[phase].append((sent_at - created_at).total_seconds() * 1000)
        return {
            phase: {
                "emails": len(by_phase[phase]) + unsent[phase],
                "p50_ms": _percentile(by_phase[phase], 0.5),
                "p99_ms": _percentile(by_phase[phase], 0.99),
                "max_ms": round(max(by_phase[phase]), 1) if by_phase[phase] else None,
                "unsent": unsent[phase],
            }
            for phase in PHASES
        }


def start(app: Any, obs: Any) -> tuple[Emailer, threading.Event, threading.Thread]:
    emailer = Emailer(app, obs)
    stop = threading.Event()
    thread = threading.Thread(target=emailer.run, args=(stop,), daemon=True)
    thread.start()
    return emailer, stop, thread


def wait_for_delivery(emailer: Emailer, limit_s: float) -> None:
    """Give the emails of the last phase time to arrive (bounded)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        stats = emailer.latencies()
        if sum(s["unsent"] for s in stats.values()) == 0:
            return
        time.sleep(1)
