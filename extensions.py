"""Flask extensions, created unbound and bound in `app.create_app`."""

from __future__ import annotations

from flask import Flask
from flask_login import LoginManager
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect
from redis import Redis
from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

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


class RedisClient:
    """One Redis connection pool per app, built from REDIS_URL at `init_app`, connected lazily."""

    def __init__(self) -> None:
        self._url: str | None = None
        self._client: Redis | None = None

    def init_app(self, app: Flask) -> None:
        self._url = app.config["REDIS_URL"]
        self._client = None
        app.extensions["redis"] = self

    @property
    def client(self) -> Redis:
        if self._client is None:
            if self._url is None:
                raise RuntimeError("redis_client.init_app(app) was not called")
            # A short socket timeout: Redis answers in microseconds or is down, and
            # a web request must not hang on it.
            self._client = Redis.from_url(self._url, socket_connect_timeout=1.0, socket_timeout=2.0)
        return self._client


redis_client = RedisClient()
