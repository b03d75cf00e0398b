"""The provider's balance, read through its gateway page by page and kept once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import stripe
from flask import Flask

from extensions import db
from models import ProviderBalanceTxn
from providers.registry import PROVIDERS
from providers.stripe import balance as stripe_balance
from services.statements import provider_balance
from tests.helpers import all_rows
from tests.providers import toy
from tests.sandbox_support import sdk_charge


def test_every_page_of_a_day_is_read_and_kept_once(
    app: Flask, sandbox: Any, sdk: stripe.StripeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stripe_balance, "BALANCE_PAGE_SIZE", 2)
    for n in range(5):
        sdk_charge(sdk, 700 + n)
    now = datetime.now(UTC)
    with app.app_context():
        read = provider_balance.day_transactions(
            "stripe", now - timedelta(hours=1), now + timedelta(minutes=1)
        )
        assert sorted(t.amount_minor for t in read) == [700, 701, 702, 703, 704]
        kept = provider_balance.record("stripe", read)
        again = provider_balance.record("stripe", read + read)
        assert kept == again and len(set(kept.values())) == 5
        db.session.commit()
    assert len(all_rows(app, ProviderBalanceTxn)) == 5


def test_a_provider_whose_balance_cannot_be_read_says_so(
    app: Flask, sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(PROVIDERS, "toy", toy.SPEC)  # a client without balance reads
    app.config["TOY_GREETING"] = "hello"
    with app.app_context():
        assert provider_balance.reader("stripe") is not None
        assert provider_balance.reader("braintree") is not None
        assert provider_balance.reader("toy") is None
        with pytest.raises(provider_balance.BalanceUnreadable):
            provider_balance.payout_transactions("toy", "po_1")
