"""gunicorn's own refusals under the web program's settings (edge.JSONErrorWorker): a
request it cannot read is answered in JSON, and a 413 closes its connection, said so.
Raw sockets to a real gunicorn, since a test client never reaches this layer."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.edge_support import exchange, gunicorn_edge


@pytest.fixture(scope="module")
def edge() -> Iterator[int]:
    with gunicorn_edge() as port:
        yield port


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [
        (b"GET /api/orders?" + b"q" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
        (
            b"GET /api/orders HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"x" * 65536 + b"\r\n\r\n",
            431,
            "request_header_fields_too_large",
        ),
        (b"GET /api/orders HTTP/1.1\r\nHost: x\r\n" + b"X-H: 1\r\n" * 130 + b"\r\n", 431, None),
        (b"GARBAGE\x01 /api HTTP/1.1\r\n\r\n", 400, "bad_request"),
        (b"GET /api/orders HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n", 400, "bad_request"),
    ],
    ids=["414", "431 64 KB header", "431 many headers", "400 request line", "400 header"],
)
def test_what_gunicorn_refuses_is_json(
    edge: int, raw: bytes, status: int, code: str | None
) -> None:
    line, headers, body, conn = exchange(edge, raw)
    conn.close()
    assert line.startswith(f"HTTP/1.1 {status} ")
    assert headers["content-type"] == "application/json" and headers["connection"] == "close"
    error = json.loads(body)["error"]
    assert error["message"] and (code is None or error["code"] == code)


def test_after_a_413_the_connection_is_closed_and_says_so(edge: int) -> None:
    raw = b"POST /api/big HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n" + b"x" * 1000
    line, headers, _, conn = exchange(edge, raw)
    with conn:
        assert line.startswith("HTTP/1.1 413 ")
        assert headers["connection"] == "close"
        conn.settimeout(5)
        assert conn.recv(1) == b""  # closed by the server, as it said
    # An ordinary answer keeps the connection alive (the worker closes only after 413).
    line, headers, _, conn = exchange(edge, b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
    conn.close()
    assert line.startswith("HTTP/1.1 200 ") and headers.get("connection", "keep-alive") != "close"
