"""Customer accounts: emails normalized, sessions tied to the session version."""

from __future__ import annotations

import pytest
from flask import Flask

from services.accounts.customers import (
    AccountError,
    create_customer,
    end_sessions,
    load_session_user,
    normalize_email,
)


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "no-at-sign",
        "@example.com",
        "me@",
        "a" * 250 + "@x.io",
        # The reported holes: a list copied every receipt to a stranger, a display name
        # put an attacker's text in To:, a line break made a header of its own.
        "a@example.com, victim@corp.example",
        "a@example.com;victim@corp.example",
        "Eve <eve@example.com>",
        '"Support" <eve@example.com>',
        "a@example.com\r\nBcc: victim@corp.example",
        "a@exa\nmple.com",
    ],
)
def test_invalid_emails_are_refused(raw: str) -> None:
    with pytest.raises(AccountError):
        normalize_email(raw)
    assert normalize_email("  Carol@Example.COM ") == "carol@example.com"


def test_a_session_id_names_the_current_session_version(app_ctx: Flask) -> None:
    customer = create_customer("sv@example.com", "password123", ["EUR"])
    session_id = customer.get_id()
    assert session_id == f"customer:{customer.id}:0"
    assert load_session_user(session_id) is customer
    end_sessions(customer)  # logout everywhere
    assert load_session_user(session_id) is None
    assert load_session_user(customer.get_id()) is not None
    for forged in (f"customer:{customer.id}", "admin:1:0", "customer:99999999999:0", "x"):
        assert load_session_user(forged) is None
