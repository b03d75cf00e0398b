"""The Stripe client against the live sandbox: every outcome, and resolution of unknowns."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
import requests

from devtools.servers import free_port
from providers.base import ChargeRequest
from providers.outcomes import Absent, ActionRequired, Declined, NotSent, Succeeded, Unknown
from providers.stripe import StripeProvider
from tests.providers.stripe.support import POLICY, charge_request, client, sent_now


def test_successful_charge(sandbox: Any) -> None:
    outcome = client(sandbox).charge(charge_request())
    assert isinstance(outcome, Succeeded) and outcome.provider_payment_id.startswith("pi_")
    assert sandbox.succeeded_charges("1") == 1


@pytest.mark.parametrize(
    ("method", "code"),
    [
        ("pm_card_chargeDeclined", "generic_decline"),
        ("pm_card_chargeDeclinedInsufficientFunds", "insufficient_funds"),
    ],
)
def test_declines_carry_their_code(sandbox: Any, method: str, code: str) -> None:
    outcome = client(sandbox).charge(charge_request(payment_method=method))
    assert isinstance(outcome, Declined)
    assert outcome.code == code
    assert sandbox.succeeded_charges("1") == 0


def test_a_card_that_needs_authentication_answers_where_to_send_the_customer(
    sandbox: Any,
) -> None:
    stripe = client(sandbox)
    request = charge_request(payment_method="pm_card_authenticationRequired")
    outcome = stripe.charge(request)
    assert isinstance(outcome, ActionRequired)
    assert outcome.url and outcome.url.startswith(f"{sandbox.url}/3d_secure/authenticate/pi_")
    assert outcome.report.amount_minor == 2500 and outcome.report.our_id == "1"
    # Still waiting: the replay's stored answer and the intent itself agree.
    sent = sent_now(ChargeRequest(**{**request.__dict__, "provider_payment_id": None}))
    assert isinstance(stripe.charge(sent), ActionRequired)  # the replay
    by_id = ChargeRequest(**{**sent.__dict__, "provider_payment_id": outcome.provider_payment_id})
    assert isinstance(stripe.lookup(by_id), ActionRequired)
    cancelled = stripe.cancel(
        ChargeRequest(**{**sent.__dict__, "provider_payment_id": outcome.provider_payment_id})
    )
    assert isinstance(cancelled, Declined) and cancelled.code == "canceled"
    # A second cancel (the same key) gets the same answer: never an error, never a charge.
    again = stripe.cancel(
        ChargeRequest(**{**sent.__dict__, "provider_payment_id": outcome.provider_payment_id})
    )
    assert isinstance(again, Declined) and again.code == "canceled"
    # The replay still says requires_action; the lookup reads the intent: cancelled.
    assert isinstance(stripe.charge(sent), ActionRequired)
    looked_up = stripe.lookup(by_id)
    assert isinstance(looked_up, Declined) and looked_up.code == "canceled"


def test_without_a_return_url_no_redirect_is_offered(sandbox: Any) -> None:
    outcome = client(sandbox).charge(
        charge_request(payment_method="pm_card_authenticationRequired", return_url=None)
    )
    assert isinstance(outcome, ActionRequired) and outcome.url is None


def test_one_commit_then_timeout_is_resolved_by_the_keyed_retry(sandbox: Any) -> None:
    sandbox.add_fault("commit_timeout", hold_s=3, count=1, dialect="stripe", endpoint="create")
    outcome = client(sandbox).charge(charge_request())
    assert isinstance(outcome, Succeeded)  # the HTTP layer replayed with the same key
    assert len(sandbox.requests_log(endpoint="create")) == 2
    assert sandbox.succeeded_charges("1") == 1


def test_commit_then_timeout_is_unknown_and_replay_resolves_it(sandbox: Any) -> None:
    fault = sandbox.add_fault("commit_timeout", hold_s=3, dialect="stripe", endpoint="create")
    stripe = client(sandbox)
    request = charge_request()
    first = stripe.charge(request)
    assert isinstance(first, Unknown), first  # never Declined: it went through
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)  # provider recovers
    resolved = stripe.charge(sent_now(request))  # the replay: Stripe's stored answer
    assert isinstance(resolved, Succeeded)
    assert sandbox.succeeded_charges("1") == 1
    assert len(sandbox.requests_log(endpoint="create")) >= 3  # every attempt used the key


def test_reset_before_processing_is_unknown_then_replay_charges_once(sandbox: Any) -> None:
    # The retry layer repeats the keyed POST; the fault hits every attempt of the first call.
    fault = sandbox.add_fault("reset_before", dialect="stripe", endpoint="create")
    stripe = client(sandbox)
    request = charge_request()
    assert isinstance(stripe.charge(request), Unknown)
    assert sandbox.succeeded_charges("1") == 0
    requests.delete(f"{sandbox.url}/_sandbox/faults/{fault}", timeout=5)
    # Reading finds nothing, and proves nothing yet (our request may still be running) ...
    assert isinstance(stripe.lookup(sent_now(request)), Unknown)
    # ... and the replay is the request that runs: charged once.
    assert isinstance(stripe.charge(sent_now(request)), Succeeded)
    assert sandbox.succeeded_charges("1") == 1


def test_refused_connection_is_not_sent() -> None:
    stripe = StripeProvider(f"http://127.0.0.1:{free_port()}", "sk_test_sandbox", POLICY)
    outcome = stripe.charge(charge_request())
    assert isinstance(outcome, NotSent)
    assert outcome.is_provider_failure


def test_rate_limited_is_not_sent_with_retry_after(sandbox: Any) -> None:
    sandbox.add_fault("error", status=429, retry_after=7, dialect="stripe", endpoint="create")
    outcome = client(sandbox).charge(charge_request())
    assert isinstance(outcome, NotSent)
    assert outcome.retry_after_s == 7
    assert sandbox.succeeded_charges("1") == 0


def test_stored_500_is_unknown_and_replayed_as_stored(sandbox: Any) -> None:
    sandbox.add_fault("error", status=500, count=1, dialect="stripe", endpoint="create")
    stripe = client(sandbox)
    request = charge_request()
    assert isinstance(stripe.charge(request), Unknown)
    # Replays return the stored 500; search finds nothing but may lag: still unknown.
    assert isinstance(stripe.lookup(sent_now(request)), Unknown)
    # Once search is authoritative, "nothing there" is an answer: never charged.
    assert isinstance(stripe.lookup(sent_now(request, timedelta(minutes=10))), Absent)
    assert sandbox.succeeded_charges("1") == 0


def test_same_key_with_different_parameters_is_an_unknown_bug(sandbox: Any) -> None:
    stripe = client(sandbox)
    request = charge_request()
    assert isinstance(stripe.charge(request), Succeeded)
    tampered = ChargeRequest(**{**request.__dict__, "amount_minor": 9999})
    outcome = stripe.charge(tampered)
    assert isinstance(outcome, Unknown) and "idempotency_error" in outcome.reason
    assert len(sandbox.requests_log(endpoint="create")) == 2  # never retried
    assert sandbox.succeeded_charges("1") == 1


def test_key_in_flight_is_not_sent(sandbox: Any) -> None:
    sandbox.add_fault("hang", seconds=0.8, count=1, dialect="stripe", endpoint="create")
    stripe = client(sandbox)
    request = charge_request()
    first: list[Any] = []
    thread = threading.Thread(target=lambda: first.append(stripe.charge(request)))
    thread.start()
    sandbox.wait_for_request("create")  # the first is at Stripe, held by the fault
    second = client(sandbox).charge(request)
    thread.join()
    # It reached Stripe: unknown (a lookup tells), never "not sent".
    assert isinstance(second, Unknown) and "idempotency_key_in_use" in second.reason
    assert not second.is_provider_failure
    assert isinstance(first[0], Succeeded)
    assert sandbox.succeeded_charges("1") == 1


def test_lookup_after_key_lifetime_searches_instead_of_replaying(sandbox: Any) -> None:
    sandbox.add_fault("search_lag", seconds=0, dialect="stripe")  # the index has caught up
    stripe = client(sandbox)
    request = charge_request()
    assert isinstance(stripe.charge(request), Succeeded)
    old = sent_now(request, timedelta(hours=25))
    assert isinstance(stripe.lookup(old), Succeeded)
    assert len(sandbox.requests_log(endpoint="create")) == 1  # no replay after the lifetime
    assert len(sandbox.requests_log(endpoint="search")) == 1


def test_wrong_api_key_is_not_sent(sandbox: Any) -> None:
    outcome = client(sandbox, secret_key="sk_wrong").charge(charge_request())
    assert isinstance(outcome, NotSent) and "authentication" in outcome.reason
    assert not outcome.is_provider_failure
