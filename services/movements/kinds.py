"""The kinds of money movement the engine runs, as data: a kind's jobs, job ids and the
name its sends are recorded under. Adding a kind (docs/architecture.md, "Adding a
movement kind") starts here."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from models import PaymentStatus, RefundStatus, TransitionSource
from services.platform import job_paths


@dataclass(frozen=True)
class Kind:
    name: str  # the send job's id prefix and the call log's operation
    noun: str  # in reasons a person reads: "payment", "refund"
    send_job: str  # the dotted path of the RQ job that sends one (jobs/)
    lookup_job: str  # ... and of the one that asks the provider what happened
    lookup_prefix: str
    send_source: TransitionSource  # who a send's answer is recorded as
    row_noun: str  # what its rows are: "payment", "refund"
    unknown: enum.Enum  # its states the lifecycle reads and moves to
    failed: enum.Enum
    review: enum.Enum  # the state the lifecycle escalates to (needs_review)

    def send_job_id(self, row_id: int, suffix: str = "") -> str:
        return f"{self.name}-{row_id}{suffix}"

    def lookup_job_id(self, row_id: int, attempts: int, suffix: str = "") -> str:
        return f"{self.lookup_prefix}-{row_id}-{attempts}{suffix}"


CHARGE = Kind(
    name="charge",
    noun="outcome",
    send_job=job_paths.CHARGE,
    lookup_job=job_paths.RECONCILE,
    lookup_prefix="reconcile",
    send_source=TransitionSource.CHARGE,
    row_noun="payment",
    unknown=PaymentStatus.UNKNOWN,
    failed=PaymentStatus.FAILED,
    review=PaymentStatus.NEEDS_REVIEW,
)
REFUND = Kind(
    name="refund",
    noun="refund",
    send_job=job_paths.REFUND,
    lookup_job=job_paths.RECONCILE_REFUND,
    lookup_prefix="refund-reconcile",
    send_source=TransitionSource.REFUND,
    row_noun="refund",
    unknown=RefundStatus.UNKNOWN,
    failed=RefundStatus.FAILED,
    review=RefundStatus.NEEDS_REVIEW,
)
KINDS = (CHARGE, REFUND)
