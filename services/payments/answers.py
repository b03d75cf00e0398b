"""What a provider's answer means for a payment (the charge kind's `apply`,
services/payments/kind.py), and the check that comes first: provider reports are
checked against the payment before they move money.

A charge answer, a lookup, a search hit and a webhook each say which payment the
provider acted on and for how much. Any of these may be wrong (a bug, a proxy, a
replayed or forged event signed with a leaked secret): a report moves money only
when its amount, currency, our reference and (once we know it) the provider's
payment id all match the payment. A mismatch is never applied: the payment goes
to needs_review with both sides in the reason.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from models import Payment, PaymentStatus, TransitionSource
from models.types import utcnow
from providers.outcomes import (
    ActionRequired,
    Declined,
    NotSent,
    Outcome,
    Report,
    Succeeded,
    Unknown,
)
from services.movements import answers as movement_answers
from services.movements import lifecycle
from services.movements.kinds import Kind
from services.payments import attempts
from services.payments.state import log_context, move
from services.payments.table import DECLINED_PREFIX
from settings import settings

log = logging.getLogger(__name__)
# A payment's decline code when the provider refused our request itself (its shape),
# not the card: the pages and emails say it could not be processed.
COULD_NOT_PROCESS = "could_not_process"
# ... and when the card declined too often for its customer lately: it was not sent.
CARD_REFUSED = "card_velocity_exceeded"  # Stripe's own decline code for the same
AWAITING_OUTCOME = (PaymentStatus.PENDING, PaymentStatus.UNKNOWN, PaymentStatus.REQUIRES_ACTION)
_WHAT = {Succeeded: "a success", Declined: "a decline", ActionRequired: "a requires-action"}

MISMATCH_PREFIX = "report mismatch"  # transition reasons start with it (dashboard, search)


def mismatch(
    payment: Payment, provider_payment_id: str | None, report: Report, *, is_success: bool
) -> str | None:
    """What in the report contradicts the payment, or None when it matches (the one
    check of every kind: services/movements/answers.py)."""
    held = payment.provider_payment_id
    return movement_answers.mismatch(
        "payment", payment, held, provider_payment_id, report, is_success=is_success
    )


def set_aside(
    payment: Payment, problem: str, *, source: TransitionSource, what: str, actor: str | None = None
) -> None:
    """Send a locked payment whose report did not match to review (caller's transaction)."""
    lifecycle.count_mismatch(payment.provider, source.value)
    log.error(
        "payment %s (key %s, provider %s): %s does not match the payment: %s",
        payment.id,
        payment.idempotency_key,
        payment.provider,
        what,
        problem,
        extra=log_context(payment),
    )
    payment.next_reconcile_at = None
    move(
        payment,
        PaymentStatus.NEEDS_REVIEW,
        source=source,
        reason=f"{MISMATCH_PREFIX}: {what} says {problem}",
        actor=actor,
    )


def apply_outcome(
    kind: Kind,
    payment: Payment,
    outcome: Outcome,
    source: TransitionSource,
    previously_sent: datetime | None,
) -> lifecycle.FollowUp:
    """Apply an answer to a locked payment; return what to enqueue after the commit."""
    if isinstance(outcome, Succeeded | Declined | ActionRequired):
        problem = mismatch(
            payment,
            outcome.provider_payment_id,
            outcome.report,
            is_success=isinstance(outcome, Succeeded),
        )
        if problem:
            set_aside(payment, problem, source=source, what=f"{_WHAT[type(outcome)]} answer")
            return lifecycle.nothing
    if isinstance(outcome, ActionRequired):
        _await_authentication(payment, outcome, source)
    elif isinstance(outcome, Succeeded):
        _succeed(payment, outcome, source)
    elif isinstance(outcome, Declined):
        _decline(payment, outcome, source)
    elif isinstance(outcome, Unknown | NotSent):
        return _still_unknown(kind, payment, outcome, source)
    return lifecycle.nothing


def _succeed(payment: Payment, outcome: Succeeded, source: TransitionSource) -> None:
    if payment.provider_payment_id is None:
        payment.provider_payment_id = outcome.provider_payment_id
    if outcome.card is not None:
        payment.card_brand, payment.card_last4 = outcome.card.brand, outcome.card.last4
    reason = f"provider payment {outcome.provider_payment_id}"
    move(payment, PaymentStatus.SUCCEEDED, source=source, reason=reason)


def _decline(payment: Payment, outcome: Declined, source: TransitionSource) -> None:
    if payment.provider_payment_id is None and outcome.provider_payment_id:
        payment.provider_payment_id = outcome.provider_payment_id
    if outcome.is_request_error:
        # Our request, not the card: the customer reads "could not be processed"
        # (never "declined"); ops were alerted by the gateway.
        payment.decline_code = COULD_NOT_PROCESS
        reason = f"our request was refused as invalid: {outcome.code} {outcome.message}"
    else:
        payment.decline_code = outcome.code[:64]
        reason = f"{DECLINED_PREFIX}{outcome.code} {outcome.message}"
    is_moved = move(payment, PaymentStatus.FAILED, source=source, reason=reason.strip())
    if is_moved and not outcome.is_request_error:
        attempts.count_decline(payment, outcome.card_fingerprint)


def _still_unknown(
    kind: Kind, payment: Payment, outcome: Unknown | NotSent, source: TransitionSource
) -> lifecycle.FollowUp:
    """No final answer: the payment is unknown (from a send) and looked up later."""
    if (
        isinstance(outcome, Unknown)
        and outcome.provider_payment_id
        and not _keep_intent_id(payment, outcome, source)
    ):
        return lifecycle.nothing
    payment.last_error = outcome.reason[:500]
    if source == kind.send_source and not move(
        payment, PaymentStatus.UNKNOWN, source=source, reason=outcome.reason
    ):
        return lifecycle.nothing  # moved meanwhile (an event settled it)
    return lifecycle.schedule_lookup(kind, payment)


def _keep_intent_id(payment: Payment, outcome: Unknown, source: TransitionSource) -> bool:
    """Keep the provider id of a payment that is not final yet (`processing`), so its next
    lookup retrieves it by id. False: the answer contradicts the payment (set aside)."""
    problem = mismatch(payment, outcome.provider_payment_id, outcome.report, is_success=False)
    if problem:
        set_aside(payment, problem, source=source, what="an unfinished answer")
        return False
    if payment.provider_payment_id is None and outcome.report.our_id == str(payment.id):
        payment.provider_payment_id = outcome.provider_payment_id
    return True


def _await_authentication(
    payment: Payment, outcome: ActionRequired, source: TransitionSource
) -> None:
    """The customer must authenticate (3-D Secure) at the provider's URL; until
    SCA_TIMEOUT_S after the first send, then the sweep cancels the payment."""
    if payment.status not in AWAITING_OUTCOME:
        return  # settled already (a webhook or the customer's return came first)
    if payment.provider_payment_id is None:
        payment.provider_payment_id = outcome.provider_payment_id
    payment.action_url = outcome.url
    started = payment.first_sent_at or utcnow()
    payment.next_reconcile_at = started + timedelta(seconds=settings().payments.sca_timeout_s)
    move(
        payment,
        PaymentStatus.REQUIRES_ACTION,
        source=source,
        reason=f"the customer must authenticate: provider payment {outcome.provider_payment_id}",
    )


def refuse_card(payment: Payment, why: str) -> None:
    """Fail a claimed payment without sending it: card testing's limits (services/
    payments/attempts.py, in_flight.py) say `why`."""
    payment.decline_code = CARD_REFUSED
    move(
        payment,
        PaymentStatus.FAILED,
        source=TransitionSource.CHARGE,
        reason=f"not sent: {why} (card testing)",
    )
