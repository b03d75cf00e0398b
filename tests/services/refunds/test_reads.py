"""The refund page's figures and why a refund cannot be made."""

from __future__ import annotations

import uuid
from typing import Any

from flask import Flask

from services.refunds.issue import refund_payment
from services.refunds.reads import refund_page
from tests.helpers import charged, committed_payment


def test_what_is_left_and_why_not(app: Flask, sandbox: Any) -> None:
    pending = committed_payment(app)
    paid = charged(app, committed_payment(app))
    with app.app_context():
        assert "only a charged payment" in refund_page("payment", pending).blocked  # type: ignore[union-attr]  # refund_page answers for an existing row
        refund_payment(paid, 300, "partial one", "ops", uuid.uuid4())
        page = refund_page("payment", paid)
        assert page is not None and not page.blocked
        assert (page.charged_minor, page.counted_minor, page.left_minor) == (1000, 300, 700)
        refund_payment(paid, None, "the rest", "ops", uuid.uuid4())
        assert "refunded already" in refund_page("payment", paid).blocked  # type: ignore[union-attr]  # refund_page answers for an existing row
        assert refund_page("payment", 999999) is None
        assert "not paid from the wallet" in refund_page("order", 1).blocked  # type: ignore[union-attr]  # refund_page answers for an existing row
