"""The production web tier (deploy/nginx/payments.conf in front of the production
gunicorn settings): 20 clients sending bodies a byte at a time take no gunicorn thread,
so /healthz answers within 1 s throughout, where gunicorn alone stalls; and what nginx
refuses itself is JSON with the API's error shape."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import requests

from devtools.nginx import nginx_binary, nginx_in_front, site
from devtools.servers import free_port
from tests.edge_support import exchange, gunicorn_edge

pytestmark = pytest.mark.skipif(
    nginx_binary() is None, reason="nginx is not installed (make test installs it as root)"
)
SLOW_CLIENTS = 20


@pytest.fixture(scope="module")
def tier() -> Iterator[tuple[int, int]]:
    """(nginx's port, gunicorn's port): one gunicorn worker of 4 threads behind nginx."""
    with gunicorn_edge() as upstream:
        port = free_port()
        with nginx_in_front(port, f"127.0.0.1:{upstream}"):
            yield port, upstream


def _slow_bodies(port: int, stop: threading.Event) -> list[threading.Thread]:
    """SLOW_CLIENTS connections, each announcing 60,000 bytes and sending one every 2 s."""

    def send_slowly() -> None:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(
                b"POST /api/orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 60000\r\n\r\n{"
            )
            while not stop.wait(2):
                conn.sendall(b" ")

    threads = [threading.Thread(target=send_slowly, daemon=True) for _ in range(SLOW_CLIENTS)]
    for thread in threads:
        thread.start()
    return threads


def _health_latencies(port: int, seconds: float) -> list[float]:
    """/healthz every 0.25 s for `seconds`: each answer's time (2 s: no answer)."""
    latencies, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.monotonic()
        try:
            ok = requests.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
        except requests.RequestException:
            ok = False
        latencies.append(time.monotonic() - started if ok else 2.0)
        time.sleep(0.25)
    return latencies


def _under_slow_bodies(port: int, seconds: float) -> list[float]:
    stop = threading.Event()
    threads = _slow_bodies(port, stop)
    try:
        time.sleep(0.5)  # every slow client connected and sending
        return _health_latencies(port, seconds)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=10)


def test_slow_bodies_take_no_worker_thread_behind_nginx(tier: tuple[int, int]) -> None:
    nginx, gunicorn = tier
    behind_nginx = _under_slow_bodies(nginx, seconds=6)
    assert len(behind_nginx) >= 10 and max(behind_nginx) < 1.0, behind_nginx
    # The same clients sent to gunicorn alone hold its 4 threads: /healthz stalls.
    alone = _under_slow_bodies(gunicorn, seconds=3)
    assert max(alone) >= 2.0, alone


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [
        (
            b"POST /api/orders HTTP/1.1\r\nHost: x\r\nContent-Length: 70000\r\n\r\n",
            413,
            "request_entity_too_large",
        ),
        (b"GET /api/orders?" + b"q" * 20000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
        (
            b"GET /api/orders HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"x" * 20000 + b"\r\n\r\n",
            431,
            "request_header_fields_too_large",
        ),
        (b"GARBAGE\x01 /api HTTP/1.1\r\nHost: x\r\n\r\n", 400, "bad_request"),
    ],
    ids=["413", "414", "431", "400"],
)
def test_what_nginx_refuses_is_json(
    tier: tuple[int, int], raw: bytes, status: int, code: str
) -> None:
    line, headers, body, conn = exchange(tier[0], raw)
    conn.close()
    assert line.split()[1] == str(status), line
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["error"]["code"] == code


def test_a_gunicorn_that_is_down_is_a_json_503_to_retry() -> None:
    port, nowhere = free_port(), free_port()
    with nginx_in_front(port, f"127.0.0.1:{nowhere}") as url:
        response = requests.get(f"{url}/api/orders", timeout=10)
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    assert response.json()["error"]["code"] == "service_unavailable"


def test_only_the_listen_address_and_upstream_are_replaced() -> None:
    rendered = site("127.0.0.1:1", "127.0.0.1:2")
    assert "listen 127.0.0.1:1;" in rendered and "server 127.0.0.1:2;" in rendered
    assert "listen 80;" not in rendered and "client_body_timeout 10s;" in rendered
