"""The application factory: a refused configuration stops the process with one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config import DEV_SECRET_KEY, PROJECT_DIR
from tests.test_config import PRODUCTION


@pytest.mark.parametrize(
    ("override", "variable"),
    [({"SECRET_KEY": DEV_SECRET_KEY}, "SECRET_KEY"), ({"STRIPE_API_BASE": "http://x"}, "STRIPE")],
)
def test_a_refused_start_prints_one_line_naming_the_variable(
    override: dict[str, str], variable: str
) -> None:
    """gunicorn imports wsgi.py: the operator sees one line, not a traceback."""
    env = {**os.environ, **PRODUCTION, **override}
    done = subprocess.run(
        [sys.executable, "-c", "import wsgi"],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 3
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("configuration error: ") and variable in lines[0]


def test_gunicorn_stops_instead_of_respawning_on_a_refused_start() -> None:
    env = {**os.environ, **PRODUCTION, "SECRET_KEY": "x"}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "gunicorn"), "wsgi:app", "--bind", "127.0.0.1:0"],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "configuration error: SECRET_KEY must be at least 32 bytes" in done.stderr
    assert "Traceback" not in done.stderr
