"""The key-less acquirer: never re-sends a charge that may have gone through."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from providers.base import ChargeRequest
from providers.outcomes import Absent, Declined, Succeeded, Unknown
from tests.providers.acquirer.support import charge_request, client


def as_sent(request: ChargeRequest) -> ChargeRequest:
    return ChargeRequest(**{**request.__dict__, "first_sent_at": datetime.now(UTC)})


def test_approved_and_declined(sandbox: Any) -> None:
    acquirer = client(sandbox)
    assert isinstance(acquirer.charge(charge_request()), Succeeded)
    declined = acquirer.charge(charge_request(payment_method="card_insufficient_funds"))
    assert isinstance(declined, Declined) and declined.code == "insufficient_funds"


def test_unknown_outcome_is_looked_up_before_any_resend(sandbox: Any) -> None:
    sandbox.add_fault("commit_timeout", hold_s=3, count=1, dialect="acquirer", endpoint="create")
    acquirer = client(sandbox)
    request = charge_request()
    assert isinstance(acquirer.charge(request), Unknown)
    # The charge job runs again: the client must ask before sending.
    again = acquirer.charge(as_sent(request))
    assert isinstance(again, Succeeded)
    assert sandbox.succeeded_charges(request.reference) == 1
    assert len(sandbox.requests_log(dialect="acquirer", endpoint="create")) == 1
    assert len(sandbox.requests_log(dialect="acquirer", endpoint="search")) == 1


def test_unknown_that_never_arrived_is_sent_once_after_lookup(sandbox: Any) -> None:
    sandbox.add_fault("reset_before", count=1, dialect="acquirer", endpoint="create")
    acquirer = client(sandbox)
    request = charge_request()
    assert isinstance(acquirer.charge(request), Unknown)
    assert len(sandbox.requests_log(dialect="acquirer", endpoint="create")) == 1  # no retry
    assert isinstance(acquirer.lookup(as_sent(request)), Absent)
    assert isinstance(acquirer.charge(as_sent(request)), Succeeded)
    assert sandbox.succeeded_charges(request.reference) == 1


def test_5xx_on_post_is_unknown_and_never_retried(sandbox: Any) -> None:
    sandbox.add_fault(
        "error", status=502, phase="after", count=1, dialect="acquirer", endpoint="create"
    )
    acquirer = client(sandbox)
    request = charge_request()
    assert isinstance(acquirer.charge(request), Unknown)
    assert len(sandbox.requests_log(dialect="acquirer", endpoint="create")) == 1
    assert isinstance(acquirer.charge(as_sent(request)), Succeeded)
    assert sandbox.succeeded_charges(request.reference) == 1


def test_lookup_by_provider_id(sandbox: Any) -> None:
    acquirer = client(sandbox)
    request = charge_request()
    charged = acquirer.charge(request)
    assert isinstance(charged, Succeeded)
    by_id = ChargeRequest(
        **{**request.__dict__, "provider_payment_id": charged.provider_payment_id}
    )
    assert acquirer.lookup(by_id) == charged
    missing = ChargeRequest(**{**request.__dict__, "provider_payment_id": "acq_nope"})
    assert isinstance(acquirer.lookup(missing), Absent)
