"""Flask extensions, created unbound and bound in `app.create_app`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flask import Flask, current_app
from flask_babel import Babel
from flask_login import LoginManager
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from redis import Redis
from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

from resilience.redis_url import redis_from_url

# Stable constraint names, so migrations can refer to them on every database.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


db = SQLAlchemy(model_class=Base)
migrate = Migrate()
csrf = CSRFProtect()
login_manager = LoginManager()
babel = Babel()


class RedisClient:
    """The app's Redis client (a connection pool that connects on first use), per app:
    one server, or the current primary of a Sentinel group (resilience/redis_url.py)."""

    def init_app(self, app: Flask) -> None:
        # A short socket timeout: Redis answers in microseconds or is down, and a web
        # request must not hang on it.
        app.extensions["redis"] = redis_from_url(
            app.config["REDIS_URL"], socket_connect_timeout=1.0, socket_timeout=2.0
        )

    @property
    def client(self) -> Redis:
        return current_app.extensions["redis"]


redis_client = RedisClient()

T = TypeVar("T")


def per_app(kind: str, name: str, make: Callable[[], T]) -> T:
    """The current app's `kind` object called `name` (a provider's client, a queue, ...),
    made by `make` the first time it is asked for and kept on the app after that."""
    made: dict[str, T] = current_app.extensions.setdefault(kind, {})
    if name not in made:
        made[name] = make()
    return made[name]
