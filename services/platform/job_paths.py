"""Every RQ job the services enqueue, by dotted path: the one registry. Services never
import jobs/ (imports point down: jobs call services), so they name a job by its path;
a test imports each path here, and no other module of services/ writes one."""

from __future__ import annotations

SEND = "jobs.movements.send_job"  # (kind name, row id): every movement kind's send
LOOK_UP = "jobs.movements.look_up_job"  # ... and its lookup
CHECK_AUTHENTICATION = "jobs.payments.check_authentication_job"
CANCEL_ABANDONED = "jobs.payments.cancel_abandoned_job"
APPLY_WEBHOOKS = "jobs.webhooks.apply_webhooks_job"
SEND_EMAIL = "jobs.notifications.send_email_job"
SEND_EMAILS = "jobs.notifications.send_emails_job"
RAISE_ALERT = "jobs.alerts.raise_alert_job"
CREATE_PROVIDER_CUSTOMER = "jobs.payments.create_provider_customer_job"
RECONCILE_BOOKS = "jobs.books.reconcile_day_job"  # (provider, "YYYY-MM-DD")

ALL = (
    SEND,
    LOOK_UP,
    CHECK_AUTHENTICATION,
    CANCEL_ABANDONED,
    APPLY_WEBHOOKS,
    SEND_EMAIL,
    SEND_EMAILS,
    RAISE_ALERT,
    CREATE_PROVIDER_CUSTOMER,
    RECONCILE_BOOKS,
)
