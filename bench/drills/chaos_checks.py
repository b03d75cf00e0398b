"""The chaos drill's checks: every invariant of money movement, against the provider's
own ledger (the sandbox), and the report a run prints."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import requests

from bench.drills.stack import Stack, Sweeper


def invariants(stack: Stack, sweeper: Sweeper) -> dict[str, Any]:
    """Everything DESIGN.md promises, checked against the provider's own ledger."""
    from sqlalchemy import func, select

    from extensions import db
    from models import (
        PAID_LIKE,
        LedgerEntry,
        LedgerKind,
        Order,
        Payment,
        PaymentPurpose,
        PaymentStatus,
        PaymentTransition,
        ProcessedWebhook,
        SourceKind,
    )

    violations: list[str] = []
    charges = requests.get(f"{stack.sandbox_url}/_sandbox/charges", timeout=30).json()
    events = requests.get(f"{stack.sandbox_url}/_sandbox/events", timeout=30).json()["data"]
    for row in charges["double_charged_payments"] + charges["double_charged_orders"]:
        violations.append(f"double charge: {row}")
    # A charge names our payment by its id (Stripe's metadata) or its key (Braintree's
    # order_id); a Braintree sale voided by a whole refund took the money all the same.
    succeeded_charges = Counter(
        c["payment_ref"] for c in charges["data"] if c["status"] in ("succeeded", "voided")
    )
    with sweeper.app.app_context():
        payments = db.session.scalars(select(Payment)).all()
        statuses = Counter(p.status.value for p in payments)
        review_reasons: Counter[str] = Counter()
        for payment in payments:
            charged = succeeded_charges.get(_ref(payment), 0)
            if payment.status not in (
                PaymentStatus.SUCCEEDED,
                PaymentStatus.FAILED,
                PaymentStatus.NEEDS_REVIEW,
            ):
                violations.append(
                    f"payment {payment.id} left {payment.status.value} ({_where(payment)})"
                )
            elif payment.status == PaymentStatus.SUCCEEDED and charged != 1:
                violations.append(f"payment {payment.id} succeeded with {charged} charges")
            elif payment.status == PaymentStatus.FAILED and charged:
                violations.append(f"payment {payment.id} failed but the customer was charged")
            elif payment.status == PaymentStatus.NEEDS_REVIEW:
                reason = _review_reason(
                    db, PaymentTransition, PaymentTransition.payment_id, payment
                )
                if not reason:
                    violations.append(f"payment {payment.id} needs review without a reason")
                else:
                    review_reasons[re.sub(r"\d+", "N", reason)[:120]] += 1
        # A top-up credits the wallet exactly once, and only when it succeeded.
        known = {_ref(p) for p in payments}
        for ref in succeeded_charges.keys() - known:
            violations.append(f"provider charged payment ref {ref!r} that we have no record of")
        credits = Counter(
            db.session.scalars(
                select(LedgerEntry.operation_id).where(LedgerEntry.kind == "topup")
            ).all()
        )
        for payment in payments:
            if payment.purpose != PaymentPurpose.WALLET_TOPUP:
                continue
            expected = 1 if payment.status == PaymentStatus.SUCCEEDED else 0
            if credits.get(f"topup:{payment.id}", 0) != expected:
                violations.append(
                    f"top-up {payment.id} credited {credits.get(f'topup:{payment.id}', 0)}x"
                )
        # An order is paid by exactly one succeeded payment or one wallet debit.
        paid_by_card = Counter(
            p.order_id for p in payments if p.order_id and p.status == PaymentStatus.SUCCEEDED
        )
        paid_by_wallet = Counter(
            db.session.scalars(
                select(LedgerEntry.source_id).where(
                    LedgerEntry.source_kind == SourceKind.ORDER,
                    LedgerEntry.kind == LedgerKind.ORDER,
                )
            )
        )
        orders = db.session.execute(select(Order.id, Order.status)).all()
        for order_id, status in orders:
            times = paid_by_card[order_id] + paid_by_wallet[order_id]
            if times != (1 if status in PAID_LIKE else 0):
                violations.append(f"order {order_id} is {status.value} and was paid {times}x")
        recorded = Counter(
            db.session.scalars(
                select(ProcessedWebhook.event_id).where(ProcessedWebhook.provider == "stripe")
            ).all()
        )
        refund_findings = _refund_invariants(stack, db, payments, charges["data"])
        violations += refund_findings.pop("violations")
        dispute_findings = _dispute_invariants(stack, db)
        violations += dispute_findings.pop("violations")
        negative = db.session.scalar(
            select(func.count()).select_from(Payment).where(Payment.amount_minor <= 0)
        )
        db.session.remove()
    delivered = [e for e in events if e["dialect"] == "stripe" and e["delivered_at"]]
    for event in delivered:
        if recorded.get(event["id"], 0) != 1:
            violations.append(f"webhook {event['id']} recorded {recorded.get(event['id'], 0)}x")
    if negative:
        violations.append(f"{negative} payments with a non-positive amount")
    audit_exit, audit = sweeper.cli("wallet", "audit")
    if audit_exit != 0:
        violations.append(f"wallet audit failed: {audit.strip()[-500:]}")
    return {
        "payments": len(payments),
        "final_statuses": dict(statuses),
        "needs_review_reasons": dict(review_reasons),
        "orders": len(orders),
        "double_charges": len(charges["double_charged_payments"]),
        "provider_charges_succeeded": sum(succeeded_charges.values()),
        "charged_by_provider": dict(
            Counter(c["dialect"] for c in charges["data"] if c["status"] == "succeeded")
        ),
        "webhooks_delivered": len(delivered),
        "webhooks_recorded": sum(recorded.values()),
        "webhooks_awaiting_redelivery": sum(
            1 for e in events if e["dialect"] == "stripe" and not e["delivered_at"]
        ),
        "wallet_audit": audit.strip().splitlines()[-1] if audit.strip() else "",
        **refund_findings,
        **dispute_findings,
        "violations": violations,
    }


def _refund_invariants(
    stack: Stack, db: Any, payments: Sequence[Any], charges: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """Refunds at the provider = refunds we recorded as succeeded, never more than charged
    (`charges`: the provider's ledger of charges, read once by the caller)."""
    from sqlalchemy import select

    from models import Refund, RefundStatus, RefundTransition

    answer = requests.get(f"{stack.sandbox_url}/_sandbox/refunds", timeout=30).json()
    made = [r for r in answer["data"] if r["status"] not in ("failed", "canceled", "declined")]
    at_provider = Counter(r["refund_ref"] for r in made)
    violations = [
        f"refunded beyond the charge at the provider: {r}" for r in answer["over_refunded"]
    ]
    refunds = db.session.scalars(select(Refund).where(Refund.provider != "wallet")).all()
    ours = {_ref(r) for r in refunds}
    for ref in at_provider.keys() - ours:
        violations.append(f"provider refunded ref {ref!r} that we have no record of")
    # A whole refund of a Braintree sale not settled yet is its void (the sale's own id).
    voided = {c["object_id"] for c in charges if c["status"] == "voided"}
    refunded: Counter[int] = Counter()
    review_reasons: Counter[str] = Counter()
    for refund in refunds:
        if refund.status == RefundStatus.NEEDS_REVIEW:
            reason = _review_reason(db, RefundTransition, RefundTransition.refund_id, refund)
            shown = re.sub(r"[0-9a-f-]{8,}|\d+", "N", reason or "no reason")[:120]
            review_reasons[f"{refund.provider}: {shown}"] += 1
        times = at_provider.get(_ref(refund), 0) + (refund.provider_refund_id in voided)
        if not refund.status.is_final:
            violations.append(f"refund {refund.id} left {refund.status.value} ({_where(refund)})")
        elif refund.status == RefundStatus.SUCCEEDED and times != 1:
            violations.append(f"refund {refund.id} succeeded with {times} refunds at the provider")
        elif refund.status == RefundStatus.FAILED and times:
            violations.append(f"refund {refund.id} failed but the provider refunded it")
        if refund.status != RefundStatus.FAILED and refund.payment_id is not None:
            refunded[refund.payment_id] += refund.amount_minor
    charged = {p.id: p.amount_minor for p in payments}
    for payment_id, total in refunded.items():
        if total > charged.get(payment_id, 0):
            violations.append(f"payment {payment_id}: refunds {total} > charged")
    return {
        "violations": violations,
        "refunds": len(refunds),
        "refund_statuses": dict(Counter(r.status.value for r in refunds)),
        "refund_review_reasons": dict(review_reasons),
        "provider_refunds": len(made),
    }


def _review_reason(db: Any, transition: Any, of: Any, row: Any) -> str | None:
    """Why a movement in review is there: its last transition to its status."""
    from sqlalchemy import select

    found = (
        select(transition.reason)
        .where(of == row.id, transition.to_status == row.status)
        .order_by(transition.id.desc())
        .limit(1)
    )
    return db.session.scalar(found)


def _ref(row: Any) -> str:
    """How the provider's ledger names our payment or refund: Stripe by our id (its
    metadata), Braintree by our key (its order_id)."""
    return str(row.idempotency_key) if row.provider == "braintree" else str(row.id)


def _where(row: Any) -> str:
    """Where a movement left unfinished stands: the evidence a failed run leaves."""
    names = ("send_count", "lease_expires_at", "next_attempt_at", "next_reconcile_at")
    facts = [f"{name} {getattr(row, name, None)}" for name in names]
    facts.append(f"last error {str(getattr(row, 'last_error', None))[:200]}")
    return ", ".join(facts)


def disputes_caught_up(stack: Stack, sweeper: Sweeper) -> bool:
    """Every dispute at the provider is recorded here in its status (events applied)."""
    from extensions import db

    with sweeper.app.app_context():
        try:
            return not _dispute_invariants(stack, db)["violations"]
        except Exception:  # the database or the sandbox is not answering yet
            return False
        finally:
            db.session.remove()


def _dispute_invariants(stack: Stack, db: Any) -> dict[str, Any]:
    """Every dispute at the provider is recorded once here, in the provider's status, and
    its order is disputed exactly while the money is out (the wallet audit checks the
    postings of top-ups)."""
    from sqlalchemy import select

    from models import Dispute, Order, OrderStatus, Payment

    auth = {"Authorization": "Bearer sk_test_sandbox"}
    theirs: dict[str, str] = {}
    after: str | None = None
    while True:
        params = {"limit": "100", **({"starting_after": after} if after else {})}
        page = requests.get(
            f"{stack.sandbox_url}/v1/disputes", params=params, headers=auth, timeout=30
        ).json()
        theirs.update({d["id"]: d["status"] for d in page["data"]})
        if not page["has_more"]:
            break
        after = page["data"][-1]["id"]
    violations = []
    ours = db.session.scalars(select(Dispute)).all()
    by_id = {d.provider_dispute_id: d for d in ours}
    for dispute_id, status in theirs.items():
        found = by_id.get(dispute_id)
        if found is None:
            violations.append(f"dispute {dispute_id} ({status}) at the provider is not recorded")
        elif found.status.value != status:
            violations.append(
                f"dispute {dispute_id}: {status} at the provider, ours {found.status.value}"
            )
    for dispute in ours:
        payment = db.session.get(Payment, dispute.payment_id)
        order = db.session.get(Order, payment.order_id) if payment and payment.order_id else None
        withdrawn = dispute.holds_funds  # a chargeback's (an inquiry moves no money)
        if order is not None and (order.status == OrderStatus.DISPUTED) != withdrawn:
            violations.append(
                f"dispute {dispute.id} is {dispute.status.value}, order {order.status.value}"
            )
    return {
        "violations": violations,
        "disputes": len(ours),
        "dispute_statuses": dict(Counter(d.status.value for d in ours)),
        "provider_disputes": len(theirs),
    }


def print_report(results: dict[str, Any]) -> None:
    print(
        f"seed {results['seed']} on {results['database']}: {results['operations']} operations "
        f"by {results['customers']} customers in {results['traffic_s']} s"
    )
    for fault in results["faults"]:
        print(f"  {fault['at_s']:>6} s  {fault['fault']}")
    for key in (
        "payments",
        "final_statuses",
        "needs_review_reasons",
        "orders",
        "double_charges",
        "provider_charges_succeeded",
        "webhooks_delivered",
        "webhooks_recorded",
        "webhooks_awaiting_redelivery",
        "wallet_audit",
        "refunds",
        "refund_statuses",
        "provider_refunds",
        "refunds_refused",
        "disputes",
        "dispute_statuses",
        "provider_disputes",
        "disputes_decided",
        "worker_restarts",
        "client_responses",
        "client_gave_up",
        "settle_s",
        "books",
    ):
        print(f"{key:32} {results[key]}")
    if results["violations"]:
        print(f"INVARIANTS VIOLATED ({len(results['violations'])}), seed {results['seed']}:")
        for violation in results["violations"][:50]:
            print(f"  {violation}")
    else:
        print("every invariant holds")
