"""Sending the outbox: the `notifications` queue's job (its own worker: a bulkhead, so a
hanging payment provider never delays a receipt) and the sweep that finds lost rows.

Delivery is at least once. Every attempt of a row carries the same Message-ID, so a
receiver can drop the copy of an attempt whose answer was lost. Failures are retried
with exponential backoff and jitter (at most EMAIL_RETRY_MAX_S apart) until
EMAIL_RETRY_HORIZON_S (a day at least) after the row was written, then the row is
`failed` with the reason (the dashboard's outbox shows it, and can send it again).
Refusals of the open breaker are not attempts: they wait for the breaker. SMTP calls
pass the same gateway as payment providers (breaker "smtp", metrics, logs).
"""

from __future__ import annotations

import random
import time
from datetime import datetime, timedelta
from email.message import EmailMessage

from sqlalchemy import or_, select, text

from extensions import db, per_app
from models import (
    OutboxMessage,
    OutboxStatus,
)
from models.types import utcnow
from providers.outcomes import Declined, NotSent, Succeeded
from providers.smtp import SMTP_GATEWAY, SmtpMailer, SmtpSettings
from resilience.gateway import CIRCUIT_OPEN, CallContext, CallRecord
from services.notifications import outbox
from services.notifications.outbox import enqueue_send
from services.notifications.rendering import render_all
from services.platform import autocommit, call_log, metrics, queues
from services.platform.provider_clients import gateway_for
from services.platform.queues import SWEEP_BATCH
from settings import settings

MIN_ATTEMPTS = 3  # tries a message gets before it may fail for time (after a resend too)
GATEWAY = SMTP_GATEWAY  # its breaker and metrics, beside the payment providers'
# One job sends the emails waiting after its own, over the kept session: at most this
# many, for at most this long (well inside the 60 s job timeout; each send has its
# own SMTP_TIMEOUT_S).
EMAIL_BATCH = 50
BATCH_BUDGET_S = 20.0


def mailer() -> SmtpMailer:
    url = settings().email.smtp_url
    return per_app(
        "mailers", url, lambda: SmtpMailer(SmtpSettings.from_url(url), settings().email.timeout_s)
    )


def send_waiting() -> int:
    """The doorbell's job (services/platform/queues.ring): send the rows waiting, a batch
    at a time over the one kept SMTP session, until none is due; when a send fails or
    its budget is spent, ring again for the rest. Returns how many were sent."""
    queues.answer(queues.EMAILS_BELL)  # before the claim: later rows ring again
    started, sent = time.monotonic(), 0
    while True:
        count, is_whole = _send_claimed(None, started)
        sent += count
        if is_whole and count < EMAIL_BATCH:
            return sent  # none left
        if not is_whole or time.monotonic() - started >= BATCH_BUDGET_S:
            outbox.wake_sender()  # the rest (the failed one waits for its retry)
            return sent


def send_batch(outbox_id: int) -> int:
    """A row's own job (a retry, the sweep, a resend): send the row, then the rows waiting
    after it. Returns how many were sent."""
    return _send_claimed(outbox_id, time.monotonic())[0]


def _send_claimed(first: int | None, started: float) -> tuple[int, bool]:
    """Claim up to EMAIL_BATCH rows (from row `first`, which must be due, or any due)
    in one statement and send them, within BATCH_BUDGET_S of `started`, stopping at the
    first that is not sent (the server or its breaker said wait). Rows claimed but not
    tried are released uncounted. Returns how many were sent, and whether all were."""
    rows, lease = _claim(first, EMAIL_BATCH, BATCH_BUDGET_S)
    if first is None and len(rows) == EMAIL_BATCH:
        outbox.wake_sender()  # more may wait: another worker's job helps meanwhile
    messages = _written(rows)
    sent = tried = 0
    for row in rows:
        if sent and time.monotonic() - started >= BATCH_BUDGET_S:
            break
        tried += 1
        if not _attempt(row, messages[row.id]):
            break
        sent += 1
    untried = [row.id for row in rows[tried:]]
    if untried:
        autocommit.all_rows(_RELEASE, {"ids": untried, "lease": lease})
    return sent, sent == len(rows)


def _written(rows: list[OutboxMessage]) -> dict[int, EmailMessage | Exception]:
    """The rows' messages (or why one cannot be written), no transaction held after."""
    messages = render_all(rows)
    db.session.rollback()  # writing them read their subjects
    return messages


_CLAIM = """
WITH batch AS (
    SELECT id FROM outbox
    WHERE status = :pending {from_first}
        AND (lease_expires_at IS NULL OR lease_expires_at < :now)
        AND (next_attempt_at IS NULL OR next_attempt_at <= :now)
    ORDER BY id LIMIT :size FOR UPDATE SKIP LOCKED
)
UPDATE outbox AS o SET lease_expires_at = :lease, attempts = o.attempts + 1, updated_at = :now
FROM batch WHERE o.id = batch.id {first_is_due}
RETURNING o.*
"""
# Typed by the table's columns: the rows come back as the model reads them (enums, UTC).
_CLAIMED = OutboxMessage.__table__.columns
_CLAIM_WAITING = text(_CLAIM.format(from_first="", first_is_due="")).columns(*_CLAIMED)
_CLAIM_FROM = text(
    _CLAIM.format(
        from_first="AND id >= :first",
        first_is_due="AND EXISTS (SELECT 1 FROM batch WHERE batch.id = :first)",
    )
).columns(*_CLAIMED)
# Claimed, not tried (the batch stopped before them): as they were.
_RELEASE = autocommit.plain("""
UPDATE outbox SET lease_expires_at = NULL, attempts = attempts - 1
WHERE id = ANY(:ids) AND lease_expires_at = :lease
""")
# A row the server took, with the call's row in the call log.
_SENT = autocommit.plain(f"""
WITH sent AS (
    UPDATE outbox SET status = :sent, sent_at = :now, last_error = NULL,
        lease_expires_at = NULL, updated_at = :now
    WHERE id = :id
)
{call_log.INSERT_SQL}
""")


def _claim(first: int | None, size: int, budget_s: float) -> tuple[list[OutboxMessage], datetime]:
    """The pending row `first` and up to size - 1 due rows after it (none when `first` is
    not pending, due and free), or, with no `first`, up to `size` due rows; leased, each
    attempt counted; as rows outside the session (transient), in id order."""
    now = utcnow()
    lease = now + timedelta(seconds=budget_s + settings().email.timeout_s * 3 + 30)
    params = {
        "first": first,
        "size": size,
        "pending": OutboxStatus.PENDING.value,
        "now": now,
        "lease": lease,
    }
    try:
        found = autocommit.all_rows(_CLAIM_WAITING if first is None else _CLAIM_FROM, params)
    except autocommit.ConnectionLost:
        return [], lease  # perhaps leased: the sweep sends them after the lease
    rows = [OutboxMessage(**row._mapping) for row in found]
    return sorted(rows, key=lambda row: row.id), lease


def _attempt(row: OutboxMessage, message: EmailMessage | Exception) -> bool:
    """One attempt of a claimed row with its message; True when the server took it."""
    if isinstance(message, Exception):
        # A message that cannot be written (a recipient with a line break, a subject
        # row gone): failed at once with the reason, never retried or left pending.
        exc = message
        locked = _locked(row.id)
        locked.status, locked.lease_expires_at = OutboxStatus.FAILED, None
        locked.last_error = f"cannot be written: {type(exc).__name__}: {exc}"[:500]
        metrics.EMAILS.labels(locked.kind.value, locked.status.value).inc()
        db.session.commit()
        return False
    context = CallContext("email", None, str(message["Message-ID"]))
    calls: list[CallRecord] = []
    outcome = gateway_for(GATEWAY).call(
        context, lambda: mailer().send(message), recorder=calls.append
    )
    if isinstance(outcome, Succeeded):
        now = utcnow()  # the gateway records every call it made: this one
        params = {**call_log.params(calls[0]), "id": row.id, "now": now}
        autocommit.all_rows(_SENT, {**params, "sent": OutboxStatus.SENT.value})
        metrics.EMAIL_LATENCY.observe((now - row.created_at).total_seconds())
        metrics.EMAILS.labels(row.kind.value, OutboxStatus.SENT.value).inc()
        return True
    call_log.write_all(calls)
    _not_sent(row.id, outcome, row.created_at)
    return False


def _locked(outbox_id: int) -> OutboxMessage:
    locked = db.session.scalar(
        select(OutboxMessage).where(OutboxMessage.id == outbox_id).with_for_update()
    )
    assert locked is not None
    return locked


def _not_sent(outbox_id: int, outcome: object, created_at: datetime) -> None:
    """The server (or the breaker) did not take it: retry with backoff, or fail."""
    row = _locked(outbox_id)
    row.lease_expires_at = None
    delay_s = None
    config = settings().email
    if isinstance(outcome, NotSent) and outcome.reason == CIRCUIT_OPEN:
        row.attempts -= 1  # not an attempt: the breaker said wait, nothing was tried
    backoff_s = config.retry_base_s * 2 ** max(0, row.attempts - 1)
    delay_s = min(backoff_s, config.retry_max_s) * random.uniform(1.0, 1.5)
    if isinstance(outcome, NotSent) and outcome.retry_after_s:
        delay_s = max(delay_s, outcome.retry_after_s)  # the breaker's own time
    horizon = created_at + timedelta(seconds=config.retry_horizon_s)
    is_past = utcnow() + timedelta(seconds=delay_s) > horizon
    if isinstance(outcome, Declined) or (is_past and row.attempts >= MIN_ATTEMPTS):
        row.status, delay_s = OutboxStatus.FAILED, None
        row.last_error = f"after {row.attempts} attempts: {_reason(outcome)}"[:500]
    else:
        row.next_attempt_at = utcnow() + timedelta(seconds=delay_s)
        row.last_error = _reason(outcome)[:500]
    metrics.EMAILS.labels(row.kind.value, row.status.value).inc()
    attempts = row.attempts
    db.session.commit()
    if delay_s is not None:
        enqueue_send(outbox_id, delay_s=delay_s, suffix=f"-retry-{attempts}")


def _reason(outcome: object) -> str:
    return str(getattr(outcome, "reason", None) or getattr(outcome, "message", "") or outcome)


def sweep_outbox(now: datetime | None = None) -> int:
    """Enqueue pending rows nobody is sending whose time has come (lost or failed jobs)."""
    now = now or utcnow()
    grace = now - timedelta(seconds=settings().payments.pending_sweep_grace_s)
    ids = db.session.scalars(
        select(OutboxMessage.id)
        .where(
            OutboxMessage.status == OutboxStatus.PENDING,
            or_(OutboxMessage.lease_expires_at.is_(None), OutboxMessage.lease_expires_at < now),
            or_(
                OutboxMessage.next_attempt_at <= now,
                (OutboxMessage.next_attempt_at.is_(None)) & (OutboxMessage.created_at < grace),
            ),
        )
        .order_by(OutboxMessage.id)
        .limit(SWEEP_BATCH)
    ).all()
    db.session.rollback()
    for outbox_id in ids:
        enqueue_send(outbox_id, suffix="-sweep")
    return len(ids)


def resend(outbox_id: int, actor: str) -> bool:
    """Send a failed email again (an admin's action, once SMTP works again): pending, with
    MIN_ATTEMPTS tries at least. False when it is not failed. Commits, then
    enqueues."""
    row = db.session.scalar(
        select(OutboxMessage).where(OutboxMessage.id == outbox_id).with_for_update()
    )
    if row is None or row.status != OutboxStatus.FAILED:
        db.session.rollback()
        return False
    row.status, row.attempts, row.next_attempt_at = OutboxStatus.PENDING, 0, None
    row.last_error = f"sent again by {actor}; before: {row.last_error or ''}"[:500]
    db.session.commit()  # the same row, the same Message-ID: a receiver drops a copy
    enqueue_send(outbox_id, suffix=f"-resend-{int(utcnow().timestamp())}")
    return True
