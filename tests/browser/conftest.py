"""Headless Chromium (Debian's chromium + chromium-driver) against the app on a live server."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from tests.helpers import serving

PROJECT_DIR = Path(__file__).resolve().parents[2]
ARTIFACTS = PROJECT_DIR / "test-artifacts"
# axe-core, the accessibility engine, from the npm registry (pinned in the Makefile).
AXE_VERSION = re.search(
    r"^AXE_VERSION := (\S+)", (PROJECT_DIR / "Makefile").read_text(), re.M
).group(1)  # type: ignore[union-attr]  # the pinned version is in the file
AXE_CACHE = PROJECT_DIR / ".venv" / f"axe-core-{AXE_VERSION}.min.js"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def _missing_chromium() -> str | None:
    """Why Chromium cannot run here, or None. Installing it is `make test`'s (Debian's
    chromium and chromium-driver, as root), never a fixture's: no network in a test."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(path)]
    if missing:
        return f"{' and '.join(missing)} missing: `make test` installs them (Debian, as root)"
    return None


@pytest.fixture
def browser(chromium: Any) -> Any:
    """The session's Chromium at its desktop size: a test that narrowed it to a phone's
    must not hide the next one's navigation (the order of tests varies by worker)."""
    chromium.set_window_size(1200, 900)
    return chromium


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    reason = _missing_chromium()
    if reason:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="chromium-")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1200,900",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def live_server(app: Flask) -> Iterator[str]:
    with serving(app) as url:
        yield url


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def axe_script() -> str:
    """axe-core's script, fetched by `make test` with npm into .venv (never here)."""
    if not AXE_CACHE.exists():
        pytest.skip(f"{AXE_CACHE.name} missing: `make test` fetches it with npm")
    return AXE_CACHE.read_text()
