"""The models' base class: Flask-SQLAlchemy's `db.Model`, which it builds at run time,
named once here so that the type checker reads it as SQLAlchemy's declarative base."""

from __future__ import annotations

from typing import TYPE_CHECKING

from extensions import db

if TYPE_CHECKING:
    from sqlalchemy.orm import DeclarativeBase

    class Model(DeclarativeBase):
        """What `db.Model` is to the type checker."""

else:
    Model = db.Model
