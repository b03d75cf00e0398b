"""The application factory: a refused configuration stops the process with one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config import DEV_SECRET_KEY, PROJECT_DIR
from tests.config_support import PRODUCTION


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


@pytest.mark.parametrize(
    "command",
    [
        ["-c", "import wsgi"],  # gunicorn's web workers
        ["-m", "flask", "--app", "app", "worker", "payments-stripe"],
        ["-m", "flask", "--app", "app", "scheduler"],
        ["-m", "flask", "--app", "app", "db", "upgrade"],
    ],
    ids=["web", "worker", "scheduler", "cli"],
)
def test_a_sqlite_database_is_refused_by_every_process(command: list[str]) -> None:
    env = {**os.environ, "DATABASE_URL": "sqlite:///x.db"}
    env.pop("APP_ENV", None)
    done = subprocess.run(
        [sys.executable, *command], cwd=PROJECT_DIR, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("configuration error: DATABASE_URL is a sqlite URL")
    assert "PostgreSQL is the only database" in lines[0]
    assert not (PROJECT_DIR / "x.db").exists()
