"""`make run` refuses to start over another one: a clear message naming the ports."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from devtools.run import WEB_PORT

PROJECT_DIR = Path(__file__).resolve().parents[2]


def test_a_taken_port_stops_make_run_with_a_clear_message() -> None:
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            busy.bind(("127.0.0.1", WEB_PORT))
            busy.listen()
        except OSError:
            pass  # something else already listens there: the same refusal is expected
        done = subprocess.run(
            [sys.executable, "-m", "devtools.run"],
            cwd=PROJECT_DIR,
            env={**os.environ, "REDIS_URL": "redis://127.0.0.1:1/0"},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert f"{WEB_PORT}" in done.stderr and "are in use" in done.stderr
