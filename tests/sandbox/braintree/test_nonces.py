"""A client API nonce stands for its card and is spent once; one never minted is no
nonce at all."""

from __future__ import annotations

import sqlite3

from sandbox.braintree import nonces, testing
from sandbox.store import SCHEMA


def test_a_nonce_is_spent_once_and_an_unknown_one_is_none() -> None:
    conn = sqlite3.connect(":memory:")
    conn.row_factory = sqlite3.Row
    conn.executescript(SCHEMA)
    nonce = nonces.mint(conn, testing.VISA.number)
    assert nonces.is_client_nonce(nonce) and not nonces.is_client_nonce("fake-valid-nonce")
    assert nonces.spend(conn, nonce) == (testing.VISA, False)
    assert nonces.spend(conn, nonce) == (None, True)
    assert nonces.spend(conn, "tokencc_sb_never") == (None, False)
