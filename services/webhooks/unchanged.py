"""A batch's events that change nothing, marked in two statements for the whole batch
instead of a row lock, a check and an UPDATE each (services/webhooks/events.apply_event).

The usual event finds its payment already where it says: the charge's own answer
settled it a moment before the provider's webhook came. Such an event is `applied`
with the note "no change: payment was <status>", exactly as apply_event would mark it,
when all of these hold (read under FOR SHARE, so none can change before the commit):

  - the event carries the provider's id of a payment of its provider that holds it;
    the report's check below then requires our own id or reference in it, if any, to
    name that same payment, so it is the one apply_event would find by its rule (our
    reference first, then the provider's id: services/movements/locate.py);
  - the payment's status is the event's outcome, and the event would add nothing to it
    (the provider's id is held already; a failure's decline code is known);
  - the event's report matches the payment (services/movements/answers.py);
  - no newer event was applied to the payment, and it is the batch's only event for it.

Everything else goes on to apply_event, under the row locks, in the same transaction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Row, text

from extensions import db
from models import PaymentStatus, ProcessedWebhook, WebhookState
from models.types import utcnow
from providers.events import ProviderEvent
from services.movements import answers
from services.payments.events import OUTCOME_STATUS

Parsed = tuple[ProcessedWebhook, ProviderEvent]

_PAYMENTS = text("""
SELECT p.id, p.provider, p.status, p.amount_minor, p.currency, p.provider_payment_id,
    p.idempotency_key, p.decline_code,
    (SELECT max(w.event_created_at) FROM processed_webhooks w
     WHERE w.payment_id = p.id AND w.state = :applied) AS newest
FROM payments p
WHERE p.provider_payment_id = ANY(:theirs)
ORDER BY p.id
FOR SHARE OF p
""")
_MARK = text("""
UPDATE processed_webhooks AS w
SET state = :applied, note = v.note, payment_id = v.payment_id, processed_at = :now
FROM unnest(CAST(:ids AS bigint[]), CAST(:payments AS bigint[]), CAST(:notes AS text[]))
    AS v(id, payment_id, note)
WHERE w.id = v.id
""")


def mark_unchanged(batch: Sequence[Parsed]) -> list[Parsed]:
    """Mark the batch's events that change nothing `applied`, in the caller's
    transaction; returns the others, in their order, for apply_event."""
    candidates = [(r, e) for r, e in batch if _is_payment_outcome(e)]
    if not candidates:
        return list(batch)
    theirs = list({event.provider_id for _, event in candidates})
    rows = db.session.execute(_PAYMENTS, {"theirs": theirs, "applied": _APPLIED}).all()
    holding = {(row.provider, row.provider_payment_id): row for row in rows}
    named = [
        (record, event, holding.get((record.provider, event.provider_id)))
        for record, event in candidates
    ]
    per_payment = Counter(payment.id for _, _, payment in named if payment is not None)
    marked: dict[int, tuple[int, str]] = {}
    for record, event, payment in named:
        if payment is None or per_payment[payment.id] > 1:
            continue
        if _changes_nothing(payment, event):
            marked[record.id] = (payment.id, f"no change: payment was {payment.status}")
    if marked:
        db.session.execute(
            _MARK,
            {
                "ids": list(marked),
                "payments": [payment_id for payment_id, _ in marked.values()],
                "notes": [note for _, note in marked.values()],
                "applied": _APPLIED,
                "now": utcnow(),
            },
        )
    return [(record, event) for record, event in batch if record.id not in marked]


_APPLIED = WebhookState.APPLIED.value


def _is_payment_outcome(event: ProviderEvent) -> bool:
    return event.outcome in OUTCOME_STATUS and bool(event.provider_id) and event.kind == "charge"


def _changes_nothing(payment: Row[Any], event: ProviderEvent) -> bool:
    """apply_event would find nothing to do: the same status, nothing new to store, a
    matching report (our id or reference in it naming this payment), no newer event
    applied."""
    status = OUTCOME_STATUS[event.outcome or ""]
    if payment.status != status.value:
        return False
    if status == PaymentStatus.FAILED and payment.decline_code is None and event.decline_code:
        return False  # apply_event stores the decline code
    if payment.newest is not None and event.created_at < payment.newest:
        return False  # apply_event marks it ignored, with the newer event's time
    problem = answers.mismatch(
        "payment",
        payment,
        payment.provider_payment_id,
        event.provider_id,
        event.report,
        is_success=status == PaymentStatus.SUCCEEDED,
    )
    return problem is None
