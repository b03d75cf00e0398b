"""Absence that does not trust our clock: the list of intents around our sends is read
on Stripe's clock (the offset read off its Date header), so a clock 330 s ahead of
Stripe's or behind it never makes a charged payment Absent."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest
import requests
import time_machine

from providers.http import clock_offset_s
from providers.outcomes import Absent, Succeeded, Unknown
from providers.stripe.client import SETTLE_S, StripeProvider
from providers.stripe.lookups import _window_on_their_clock
from tests.providers.stripe.support import charge_request, client


@pytest.mark.parametrize("skew_s", [330, -330])
def test_a_skewed_clock_never_makes_a_charged_payment_absent(sandbox: Any, skew_s: int) -> None:
    sandbox.add_fault("search_lag", seconds=3600, dialect="stripe")  # only the list can tell
    stripe = client(sandbox)
    request = charge_request()
    with time_machine.travel(datetime.now(UTC) + timedelta(seconds=skew_s), tick=True):
        sent_at = datetime.now(UTC)  # our (skewed) clock at the send
        assert isinstance(stripe.charge(request), Succeeded)  # its answer was lost, say
    # Later, past the settle window on our clock, the same skew still in place.
    later = timedelta(seconds=skew_s + SETTLE_S + 5)
    with time_machine.travel(datetime.now(UTC) + later, tick=True):
        sent = dataclasses.replace(request, first_sent_at=sent_at, last_sent_at=sent_at)
        found = stripe.lookup(sent)
        assert isinstance(found, Succeeded), found
        # Without a reading at the send, and with one, the same answer.
        read = dataclasses.replace(sent, clock_offset_s=float(-skew_s))
        assert isinstance(stripe.lookup(read), Succeeded)
    assert [r["endpoint"] for r in sandbox.requests_log(endpoint="list")]  # the list decided


def test_a_payment_never_charged_is_absent_on_a_skewed_clock_too(sandbox: Any) -> None:
    stripe = client(sandbox)
    with time_machine.travel(datetime.now(UTC) + timedelta(seconds=330 + SETTLE_S + 5), tick=True):
        long_ago = datetime.now(UTC) - timedelta(seconds=SETTLE_S + 5)
        never = charge_request(first_sent_at=long_ago, last_sent_at=long_ago)
        assert isinstance(stripe.lookup(never), Absent)


def test_no_date_means_no_proof_of_absence() -> None:
    assert isinstance(_window_on_their_clock(charge_request(), None), Unknown)
    # Our clock as it is always counts: a wrong reading only widens the window.
    assert _window_on_their_clock(charge_request(), 30.0) == (0.0, 30.0)
    assert _window_on_their_clock(charge_request(clock_offset_s=-5.0), 30.0) == (-5.0, 30.0)
    assert _window_on_their_clock(charge_request(clock_offset_s=-5.0), -330.0) == (-330.0, 0.0)


def test_the_offset_is_read_off_the_date_header() -> None:
    response = requests.Response()
    now = datetime.now(UTC).replace(microsecond=0)
    response.headers["Date"] = format_datetime(now + timedelta(seconds=330), usegmt=True)
    offset = clock_offset_s(response, now.timestamp())
    assert offset is not None and 330 <= offset <= 331
    response.headers["Date"] = "yesterday"
    assert clock_offset_s(response, now.timestamp()) is None
    del response.headers["Date"]
    assert clock_offset_s(response, now.timestamp()) is None


def test_a_lookup_without_a_date_proves_nothing(sandbox: Any) -> None:
    class _NoDate(StripeProvider):
        def _search(self, request: Any) -> Any:
            found, _ = super()._search(request)
            return found, None

    stripe = _NoDate(sandbox.url, "sk_test_sandbox", client(sandbox).policy)
    long_ago = datetime.now(UTC) - timedelta(minutes=10)
    outcome = stripe.lookup(charge_request(first_sent_at=long_ago, last_sent_at=long_ago))
    assert isinstance(outcome, Unknown) and "Date" in outcome.reason
