"""Our Braintree client against the sandbox's Braintree (itself judged by Braintree's SDK):
a sale charged, declined with its code, a duplicate after a cut connection read as
"look it up" (never failed), and a search that lags: what it finds is believed, finding
nothing proves nothing, so a sale that may have been sent is never sent again."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from providers.base import ChargeRequest
from providers.braintree.client import BraintreeProvider, transaction_outcome
from providers.outcomes import Declined, Succeeded, Unknown
from services.movements import engine
from services.payments.kind import CHARGE
from tests.providers.support import POLICY


def _client(sandbox: Any, **keys: str) -> BraintreeProvider:
    return BraintreeProvider(
        sandbox.url,
        "sandbox_merchant",
        keys.get("public", "sandbox_public_key"),
        keys.get("private", "sandbox_private_key"),
        "EUR",
        POLICY,
    )


def _request(amount_minor: int = 1400, **more: Any) -> ChargeRequest:
    return ChargeRequest(
        payment_id=1,
        idempotency_key=str(uuid.uuid4()),
        amount_minor=amount_minor,
        currency="EUR",
        payment_method=more.pop("nonce", "fake-valid-nonce"),
        **more,
    )


def test_a_sale_is_a_success_with_what_braintree_said(sandbox: Any) -> None:
    request = _request()
    outcome = _client(sandbox).charge(request)
    assert isinstance(outcome, Succeeded)
    assert (outcome.report.amount_minor, outcome.report.currency, outcome.report.reference) == (
        1400,
        "EUR",
        request.reference,
    )
    assert outcome.card is not None and (outcome.card.brand, outcome.card.last4) == ("visa", "1111")


@pytest.mark.parametrize(
    ("amount_minor", "nonce", "code"),
    [
        (200000, "fake-valid-nonce", "2000"),
        (1000, "fake-processor-declined-visa-nonce", "2000"),
        (300000, "fake-valid-nonce", "3000"),
        (500100, "fake-valid-nonce", "gateway_rejected_application_incomplete"),
        (1000, "no-such-nonce", "validation_91565"),
    ],
)
def test_a_refusal_is_a_decline_with_its_code(
    sandbox: Any, amount_minor: int, nonce: str, code: str
) -> None:
    outcome = _client(sandbox).charge(_request(amount_minor, nonce=nonce))
    assert isinstance(outcome, Declined) and outcome.code == code


def test_a_duplicate_after_a_cut_connection_is_looked_up_never_failed(sandbox: Any) -> None:
    request = _request(1700)
    sandbox.add_fault("reset_after", dialect="braintree", endpoint="sale", count=1)
    cut = _client(sandbox).charge(request)
    assert isinstance(cut, Unknown)  # it may have gone through
    # A resend without asking first (what the engine never does) is refused as a duplicate:
    # read as "look it up", not as a decline.
    again = _client(sandbox).charge(request)
    assert isinstance(again, Unknown) and "duplicate" in again.reason
    sent = datetime.now(UTC)
    asked = _client(sandbox).lookup(_with_sends(request, sent))
    assert isinstance(asked, Unknown) and "never proves" in asked.reason  # the index lags
    sandbox.age_braintree(5)  # the search's index has it now
    found = _client(sandbox).lookup(_with_sends(request, sent))
    assert isinstance(found, Succeeded)
    assert sandbox.succeeded_charges(request.reference) == 1


def _with_sends(request: ChargeRequest, at: datetime) -> ChargeRequest:
    return ChargeRequest(**{**request.__dict__, "first_sent_at": at, "last_sent_at": at})


def test_a_sale_that_may_have_been_sent_is_never_sent_again(sandbox: Any) -> None:
    """Not even an hour later: Braintree's search is the only read by our reference, and
    it lags (without bound during an incident), so "not found" is never proof."""
    long_ago = datetime.now(UTC) - timedelta(hours=1)
    maybe_sent = _with_sends(_request(1800), long_ago)
    asked = _client(sandbox).lookup(maybe_sent)
    assert isinstance(asked, Unknown) and not asked.is_provider_failure
    # The engine's one send path asks first (services/movements/engine.send_once).
    resent = engine.send_once(CHARGE, _client(sandbox), maybe_sent, long_ago)
    assert isinstance(resent, Unknown)  # asked, not sent
    assert [r["endpoint"] for r in sandbox.requests_log(dialect="braintree")].count("sale") == 0


def test_a_found_sale_is_read_by_its_id_and_wrong_keys_send_nothing(sandbox: Any) -> None:
    made = _client(sandbox).charge(_request(1900))
    assert isinstance(made, Succeeded)
    by_id = _request(1900, provider_payment_id=made.provider_payment_id)
    assert isinstance(_client(sandbox).lookup(by_id), Succeeded)
    gone = _request(1900, provider_payment_id="nosuchid")
    assert isinstance(_client(sandbox).lookup(gone), Unknown)  # not ours: no proof of ours
    # Wrong keys: a 401, which a balancer could answer as well; Braintree keeps no keys,
    # so it is Unknown (looked up before any repeat), never counted against the breaker.
    refused = _client(sandbox, public="x").charge(_request(1900))
    assert isinstance(refused, Unknown) and not refused.is_provider_failure


def test_an_answer_that_cannot_be_believed_moves_nothing() -> None:
    assert isinstance(transaction_outcome({"status": "settled"}), Unknown)  # no id
    odd = transaction_outcome({"id": "t1", "status": "settled", "amount": "10.001"})
    assert isinstance(odd, Succeeded) and odd.report.amount_minor is None  # checked later
