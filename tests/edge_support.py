"""The web tier as production runs it, for the edge tests: gunicorn with the rendered
production web program's worker class and limits, serving a small WSGI app (what
gunicorn and nginx answer themselves happens before any app code; a 413 is whatever
the app answers when a body is over its limit), and raw HTTP exchanges with it."""

from __future__ import annotations

import json
import re
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devtools.servers import free_port, running
from devtools.supervisor_conf import checked_in_layout, render

PROJECT_DIR = Path(__file__).resolve().parent.parent


def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    status = "200 OK"
    if environ["PATH_INFO"] == "/api/big":  # the body is never read, as werkzeug's 413
        status = "413 Request Entity Too Large"
    elif environ["REQUEST_METHOD"] == "POST":  # read whole, as a view reading JSON does
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    code = "request_entity_too_large" if status.startswith("413") else "ok"
    answer = json.dumps({"error": {"code": code, "message": code}}).encode()
    start_response(
        status,
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(answer))),
            ("Connection", "close" if status.startswith("413") else "keep-alive"),
        ],
    )
    return [answer]


def web_program_flags() -> list[str]:
    """The worker class and request limits of the production web program, as rendered."""
    command = next(
        line
        for line in render(checked_in_layout("production")).splitlines()
        if line.startswith("command=") and "gunicorn" in line
    )
    flags = re.findall(r"(--worker-class|--limit-request-\w+|--threads) (\S+)", command)
    assert ("--worker-class", "edge.JSONErrorWorker") in flags
    return [part for flag in flags for part in flag]


@contextmanager
def gunicorn_edge() -> Iterator[int]:
    """One production-configured gunicorn worker (its threads) for the block; its port."""
    port = free_port()
    command = [
        str(Path(sys.executable).parent / "gunicorn"),
        "tests.edge_support:app",
        *("--bind", f"127.0.0.1:{port}", "--workers", "1"),
        *web_program_flags(),
    ]
    with running(command, port, cwd=PROJECT_DIR):
        yield port


def exchange(port: int, raw: bytes) -> tuple[str, dict[str, str], bytes, socket.socket]:
    """Send `raw`; (status line, headers by lower-case name, body, the open socket)."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    conn.sendall(raw)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    while len(body) < int(headers.get("content-length", 0)):
        body += conn.recv(65536)
    return lines[0], headers, body, conn
