"""Provider reports are checked against the payment before they move money.

A charge answer, a lookup, a search hit and a webhook each say which payment the
provider acted on and for how much. Any of these may be wrong (a bug, a proxy, a
replayed or forged event signed with a leaked secret): a report moves money only
when its amount, currency, our reference and (once we know it) the provider's
payment id all match the payment. A mismatch is never applied: the payment goes
to needs_review with both sides in the reason.
"""

from __future__ import annotations

import logging

from models import Payment, PaymentStatus, TransitionSource
from models.money import KNOWN_CURRENCIES
from providers.outcomes import Report
from services.movements import lifecycle
from services.payments.state import log_context, move
from services.platform.locales import money_text

log = logging.getLogger(__name__)

MISMATCH_PREFIX = "report mismatch"  # transition reasons start with it (dashboard, search)


def mismatch(
    payment: Payment, provider_payment_id: str | None, report: Report, *, is_success: bool
) -> str | None:
    """What in the report contradicts the payment, or None when it matches.

    A success must state amount and currency, and name the payment (our reference, or
    the provider id we already hold): what it does not say cannot be checked, so it
    counts as a mismatch. A failure is checked on what it says.
    """
    problems = []
    theirs_currency = report.currency if report.currency in KNOWN_CURRENCIES else payment.currency
    ours_id = payment.provider_payment_id
    if ours_id and provider_payment_id and provider_payment_id != ours_id:
        problems.append(f"provider payment {provider_payment_id!r}, ours is {ours_id!r}")
    if report.amount_minor is None:
        if is_success:
            problems.append("no amount")
    elif report.amount_minor != payment.amount_minor:
        problems.append(
            f"amount {money_text(report.amount_minor, theirs_currency)}, "
            f"ours is {money_text(payment.amount_minor, payment.currency)}"
        )
    if report.received_minor is not None and report.received_minor != payment.amount_minor:
        problems.append(
            f"amount received {money_text(report.received_minor, theirs_currency)}, "
            f"ours is {money_text(payment.amount_minor, payment.currency)}"
        )
    if report.currency is None:
        if is_success:
            problems.append("no currency")
    elif report.currency != payment.currency.upper():
        problems.append(f"currency {report.currency!r}, ours is {payment.currency!r}")
    if report.payment_ref is not None and report.payment_ref != str(payment.id):
        problems.append(f"payment_id {report.payment_ref[:40]!r}, ours is '{payment.id}'")
    if report.reference is not None and report.reference != str(payment.idempotency_key):
        problems.append(f"reference {report.reference[:40]!r}, ours is '{payment.idempotency_key}'")
    is_known_id = bool(ours_id) and provider_payment_id == ours_id
    if is_success and report.payment_ref is None and report.reference is None and not is_known_id:
        problems.append("nothing in it names this payment (no reference of ours, new id)")
    return "; ".join(problems) or None


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
