"""The charge and reconcile use cases run by the provider workers.

Both are safe to run twice or concurrently: a lease on the payment row (a
conditional UPDATE, so it works across hosts) lets one job at a time talk to
the provider about a payment, and every result goes through the state machine.
Each use case is three steps, each committed, so a crash at any point leaves a
state the sweeps recover from:
  1. claim: lease + "may have been sent" recorded -- recovery: lease expiry
  2. call the provider (no transaction open, no connection held)
  3. apply the outcome, then enqueue follow-up jobs
A charge's claim and its success are one statement each (services/payments/settling.py).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, Row, or_, update

from extensions import db
from models import Payment, PaymentStatus, TransitionSource
from models.types import utcnow
from providers.base import ChargeRequest, Provider
from providers.outcomes import (
    Absent,
    ActionRequired,
    Declined,
    LookupOutcome,
    NotSent,
    Outcome,
    Succeeded,
    Unknown,
)
from resilience.gateway import CallContext, CallRecord, Gateway, is_refused
from services.accounts import provider_customers
from services.movements import lifecycle, replays
from services.movements.kinds import CHARGE
from services.movements.locks import lock_order_of, lock_payment, lock_payment_row
from services.payments import answers, attempts, failover, settling
from services.payments.state import move
from services.platform import autocommit, call_log
from services.platform.provider_clients import gateway_for, provider_for
from settings import settings

log = logging.getLogger(__name__)


FollowUp = Callable[[], object]
# A payment's decline code when the provider refused our request itself (its shape),
# not the card: the pages and emails say it could not be processed.
COULD_NOT_PROCESS = "could_not_process"
# ... and when the card declined too often for its customer lately: it was not sent.
CARD_REFUSED = "card_velocity_exceeded"  # Stripe's own decline code for the same
AWAITING_OUTCOME = (PaymentStatus.PENDING, PaymentStatus.UNKNOWN, PaymentStatus.REQUIRES_ACTION)


def charge_request_for(
    payment: Payment | Row[Any], first_sent_at: datetime | None
) -> ChargeRequest:
    return ChargeRequest(
        payment_id=payment.id,
        idempotency_key=str(payment.idempotency_key),
        amount_minor=payment.amount_minor,
        currency=payment.currency,
        order_id=payment.order_id,
        provider_payment_id=payment.provider_payment_id,
        first_sent_at=first_sent_at,
        last_sent_at=payment.last_sent_at if first_sent_at else None,
        # (a lean claim's row has none: a first send needs none)
        clock_offset_s=getattr(payment, "provider_clock_offset_s", None),
        payment_method=payment.payment_method,
        provider_customer_id=payment.provider_customer_id,
        # The route of blueprints/checkout.return_from_bank.
        return_url=f"{settings().payments.public_url}/payments/{payment.id}/return",
    )


def claim(payment_id: int, status: PaymentStatus, now: datetime) -> Payment | None:
    """Take the payment's lease if it is in `status` and nobody holds it; None otherwise."""
    lock_order_of(payment_id)  # order before payment, always (see lock_order_of)
    result: CursorResult[Any] = db.session.execute(  # type: ignore[assignment]
        update(Payment)
        .where(
            Payment.id == payment_id,
            Payment.status == status,
            or_(Payment.lease_expires_at.is_(None), Payment.lease_expires_at < now),
        )
        .values(lease_expires_at=lifecycle.lease_until(now))
    )
    if not result.rowcount:
        db.session.commit()
        return None
    return lock_payment_row(payment_id)  # its order is held already (above)


def charge_payment(payment_id: int) -> None:
    """Charge a pending payment once. Returns early if it is not pending or is leased.
    The claim and a success take a statement each (services/payments/settling.py);
    every other answer is applied here under the row locks."""
    try:
        claimed = settling.claim(payment_id, utcnow())
    except autocommit.ConnectionLost:
        return  # the lease may be ours: its expiry and the pending sweep recover it
    if claimed is None:
        return
    row = claimed.row
    if _is_card_refused(row):
        _refuse_card(payment_id, row)
        return
    if row.provider_customer_id is None and provider_customers.can_have(row.provider):
        provider_customers.create_later(row.customer_id, row.provider)  # for its next ones
    request = charge_request_for(row, row.previous_sent_at)
    context = CallContext("charge", payment_id, request.idempotency_key, row.send_count)
    provider = provider_for(row.provider)
    calls: list[CallRecord] = []
    outcome = gateway_for(row.provider).call(
        context, lambda: provider.charge(request), recorder=calls.append
    )
    if isinstance(outcome, Succeeded):
        if settling.settle(claimed, outcome, calls):
            return
    else:
        call_log.write_all(calls)
    payment = lock_payment(payment_id)
    assert payment is not None
    payment.lease_expires_at = None
    replays.note_clock(payment, calls[-1].clock_offset_s if calls else None)
    if is_refused(outcome):
        assert isinstance(outcome, NotSent)
        # The open circuit refused it: nothing left, so the claim's mark is undone.
        lifecycle.unmark_sending(payment, row.previous_sent_at)
        payment.last_sent_at = row.previous_last_sent_at
        follow_up = failover.reroute(payment) or _defer_charge(payment, outcome)
    else:
        follow_up = apply_outcome(payment, outcome, TransitionSource.CHARGE, row.previous_sent_at)
    db.session.commit()
    follow_up()


def _is_card_refused(row: Row[Any]) -> bool:
    """Card testing: a customer whose cards declined lately has the new card's
    fingerprint read first (a read, through the breaker); a card past its limit for
    that customer is not charged (services/payments/attempts.py)."""
    read = getattr(provider_for(row.provider), "card_fingerprint", None)
    if not (read and row.payment_method):
        return False
    if not attempts.has_recent_declines(row.customer_declined_at, utcnow()):
        return False
    context = CallContext("card_check", row.id, str(row.idempotency_key))
    fingerprint = gateway_for(row.provider).call(
        context, lambda: read(row.payment_method), is_failure=lambda found: False
    )
    return isinstance(fingerprint, str) and attempts.is_card_blocked(row.customer_id, fingerprint)


def _refuse_card(payment_id: int, row: Row[Any]) -> None:
    """Fail the claimed payment without sending it: its claim's mark is undone."""
    payment = lock_payment(payment_id)
    assert payment is not None
    payment.lease_expires_at = None
    lifecycle.unmark_sending(payment, row.previous_sent_at)
    payment.last_sent_at = row.previous_last_sent_at
    payment.decline_code = CARD_REFUSED
    move(
        payment,
        PaymentStatus.FAILED,
        source=TransitionSource.CHARGE,
        reason="not sent: this card declined too often for this customer lately (card testing)",
    )
    db.session.commit()


def reconcile_payment(payment_id: int) -> None:
    """Ask the provider what happened to an unknown payment; resolve, retry later or escalate.
    While the provider keeps the key, the ask starts with a replay of the create, which
    is a send (services/movements/replays.py); its records are read only when the
    replay cannot answer and no request of ours may still be running."""
    now = utcnow()
    payment = claim(payment_id, PaymentStatus.UNKNOWN, now)
    if payment is None:
        return
    provider = provider_for(payment.provider)
    gateway = gateway_for(payment.provider)
    key, attempt = str(payment.idempotency_key), payment.reconcile_attempts + 1
    sent = charge_request_for(payment, payment.first_sent_at)

    def read(row: Payment, named: str | None) -> Callable[[], LookupOutcome]:
        request = charge_request_for(row, row.first_sent_at)
        if named and request.provider_payment_id is None:
            request = dataclasses.replace(request, provider_payment_id=named)
        return lambda: provider.lookup(request)

    outcome = replays.ask(
        gateway,
        CallContext("replay", payment_id, key, attempt),
        CallContext("lookup", payment_id, key, attempt),
        resend=(lambda: provider.charge(sent)) if replays.may_replay(payment) else None,
        read=read,
        relock=lambda: lock_payment(payment_id),
        before=functools.partial(lifecycle.count_lookup, CHARGE, payment),
    )
    if isinstance(outcome, Absent) and not provider.capabilities.supports_idempotency_keys:
        # The key-less provider has no such payment: it was never charged, so send it
        # now (we hold the lease; the client looks up once more right before sending),
        # through the breaker like any request.
        outcome = _resend(payment_id, gateway, provider, sent)

    payment = lock_payment(payment_id)
    assert payment is not None
    payment.lease_expires_at = None
    final = outcome
    follow_up = lifecycle.judge_lookup(
        CHARGE,
        payment,
        final,
        move,
        # Never Absent here: judge_lookup took that one.
        lambda: apply_outcome(
            payment, cast(Outcome, final), TransitionSource.RECONCILE, payment.first_sent_at
        ),
    )
    db.session.commit()
    follow_up()


_nothing = lifecycle.nothing


def _resend(
    payment_id: int, gateway: Gateway, provider: Provider, request: ChargeRequest
) -> Outcome:
    def mark_sending() -> None:
        payment = lock_payment(payment_id)
        assert payment is not None
        lifecycle.mark_sending(payment, utcnow())
        db.session.commit()

    context = CallContext("resend", request.payment_id, request.idempotency_key)
    return gateway.call(context, lambda: provider.charge(request), before=mark_sending)


def apply_outcome(
    payment: Payment,
    outcome: Outcome,
    source: TransitionSource,
    previously_sent: datetime | None,
) -> FollowUp:
    """Apply an outcome to a locked payment; return what to enqueue after the commit."""
    if isinstance(outcome, Succeeded | Declined | ActionRequired):
        problem = answers.mismatch(
            payment,
            outcome.provider_payment_id,
            outcome.report,
            is_success=isinstance(outcome, Succeeded),
        )
        if problem:
            what = {Succeeded: "a success", Declined: "a decline"}.get(
                type(outcome), "a requires-action"
            )
            answers.set_aside(payment, problem, source=source, what=f"{what} answer")
            return _nothing
    if isinstance(outcome, ActionRequired):
        _await_authentication(payment, outcome, source)
        return _nothing
    if isinstance(outcome, Succeeded):
        if payment.provider_payment_id is None:
            payment.provider_payment_id = outcome.provider_payment_id
        if outcome.card is not None:
            payment.card_brand, payment.card_last4 = outcome.card.brand, outcome.card.last4
        move(
            payment,
            PaymentStatus.SUCCEEDED,
            source=source,
            reason=f"provider payment {outcome.provider_payment_id}",
        )
        return _nothing
    if isinstance(outcome, Declined):
        if payment.provider_payment_id is None and outcome.provider_payment_id:
            payment.provider_payment_id = outcome.provider_payment_id
        if outcome.is_request_error:
            # Our request, not the card: the customer reads "could not be processed"
            # (never "declined"); ops were alerted by the gateway.
            payment.decline_code = COULD_NOT_PROCESS
            reason = f"our request was refused as invalid: {outcome.code} {outcome.message}"
        else:
            payment.decline_code = outcome.code[:64]
            reason = f"declined: {outcome.code} {outcome.message}"
        is_moved = move(payment, PaymentStatus.FAILED, source=source, reason=reason.strip())
        if is_moved and not outcome.is_request_error:
            attempts.count_decline(payment, outcome.card_fingerprint)
        return _nothing
    if (
        isinstance(outcome, Unknown)
        and outcome.provider_payment_id
        and not _keep_intent_id(payment, outcome, source)
    ):
        return _nothing
    payment.last_error = outcome.reason[:500]
    if source == TransitionSource.CHARGE:
        if isinstance(outcome, NotSent):
            return _defer_charge(payment, outcome, previously_sent)
        if move(payment, PaymentStatus.UNKNOWN, source=source, reason=outcome.reason):
            return lifecycle.schedule_lookup(CHARGE, payment, move)
        return _nothing
    return lifecycle.schedule_lookup(CHARGE, payment, move)


def _keep_intent_id(payment: Payment, outcome: Unknown, source: TransitionSource) -> bool:
    """Keep the provider id of a payment that is not final yet (`processing`), so its next
    lookup retrieves it by id. False: the answer contradicts the payment (set aside)."""
    problem = answers.mismatch(
        payment, outcome.provider_payment_id, outcome.report, is_success=False
    )
    if problem:
        answers.set_aside(payment, problem, source=source, what="an unfinished answer")
        return False
    if payment.provider_payment_id is None and outcome.report.payment_ref == str(payment.id):
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


def _defer_charge(
    payment: Payment, outcome: NotSent, previously_sent: datetime | None = None
) -> FollowUp:
    """Send later; a request that left (`previously_sent` given) is first unmarked."""
    if not is_refused(outcome):
        lifecycle.unmark_sending(payment, previously_sent)  # so failover stays possible
    if payment.status != PaymentStatus.PENDING:
        return _nothing
    follow_up = lifecycle.defer(CHARGE, payment, outcome)
    log.info(
        "payment %s (key %s, provider %s) not sent (%s); retry at %s",
        payment.id,
        payment.idempotency_key,
        payment.provider,
        outcome.reason,
        payment.next_attempt_at,
    )
    return follow_up
