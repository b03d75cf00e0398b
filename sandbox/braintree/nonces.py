"""The client API's nonces (sandbox/braintree/cards.py): each stands for a test card and
is used once, as Braintree's are (a second sale with it: 93107)."""

from __future__ import annotations

import secrets
import time
from typing import Any

from sandbox.braintree import testing

PREFIX = "tokencc_"


def mint(conn: Any, number: str) -> str:
    nonce = f"{PREFIX}sb_{secrets.token_hex(10)}"
    conn.execute(
        "INSERT INTO braintree_nonces (nonce, number, created) VALUES (?, ?, ?)",
        (nonce, number, time.time()),
    )
    return nonce


def is_client_nonce(nonce: object) -> bool:
    return isinstance(nonce, str) and nonce.startswith(PREFIX)


def spend(conn: Any, nonce: str) -> tuple[testing.Card | None, bool]:
    """(the nonce's card, whether it was spent before); (None, False) for no such nonce."""
    row = conn.execute(
        "UPDATE braintree_nonces SET spent = ? WHERE nonce = ? AND spent IS NULL RETURNING number",
        (time.time(), nonce),
    ).fetchone()
    if row is not None:
        return testing.card_of_number(row["number"]), False
    known = conn.execute("SELECT 1 FROM braintree_nonces WHERE nonce = ?", (nonce,)).fetchone()
    return None, known is not None
