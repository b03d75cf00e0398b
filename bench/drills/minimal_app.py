"""The limit for this design: a minimal Flask endpoint doing one INSERT and one RQ enqueue."""

from __future__ import annotations

import os
import threading
import uuid

import psycopg
from flask import Flask, jsonify
from flask.typing import ResponseReturnValue
from redis import Redis
from rq import Queue

app = Flask(__name__)
_local = threading.local()


def _resources() -> tuple[psycopg.Connection, Queue]:
    if not hasattr(_local, "conn"):
        _local.conn = psycopg.connect(
            os.environ["DATABASE_URL"].replace("+psycopg", ""), autocommit=True
        )
        _local.queue = Queue("payments-minimal", connection=Redis.from_url(os.environ["REDIS_URL"]))
    return _local.conn, _local.queue


@app.post("/intake")
def intake() -> ResponseReturnValue:
    conn, queue = _resources()
    conn.execute("INSERT INTO minimal_intake (key) VALUES (%s)", (str(uuid.uuid4()),))
    queue.enqueue("builtins.len", "x")
    return jsonify(status="ok"), 201


def create_table(url: str) -> None:
    with psycopg.connect(url.replace("+psycopg", "")) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS minimal_intake "
            "(id bigserial PRIMARY KEY, key text UNIQUE NOT NULL)"
        )
