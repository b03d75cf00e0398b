"""An alert is one row per condition: the database refuses a second with the same key."""

from __future__ import annotations

import pytest
from flask import Flask
from sqlalchemy.exc import IntegrityError

from extensions import db
from models import Alert, AlertKind


def test_the_dedupe_key_is_unique_in_the_database(app_ctx: Flask) -> None:
    db.session.add(Alert(kind=AlertKind.BREAKER_OPEN, dedupe_key="breaker:x:open:1", detail="a"))
    db.session.commit()
    db.session.add(Alert(kind=AlertKind.BREAKER_OPEN, dedupe_key="breaker:x:open:1", detail="b"))
    with pytest.raises(IntegrityError):
        db.session.commit()
    db.session.rollback()
