"""RQ entry points of the notifications queue: take ids, re-read state, safe to run twice."""

from __future__ import annotations

from services.backoffice import alerts
from services.notifications import emails


def send_emails_job() -> int:
    """Send the emails waiting, in batches over one kept session (the doorbell's job)."""
    return emails.send_waiting()


def send_email_job(outbox_id: int) -> int:
    """A row's own job (its retry, the sweep, a resend): it, and those waiting after it."""
    return emails.send_batch(outbox_id)


def sweep_outbox_job() -> int:
    return emails.sweep_outbox()


def check_alerts_job() -> int:
    """The periodic check of what the on-call admins are emailed about (maintenance queue;
    the emails themselves go out on this queue's worker)."""
    return alerts.check()
