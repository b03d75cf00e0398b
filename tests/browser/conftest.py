"""Headless Chromium (Debian's chromium + chromium-driver) against the app on a live server."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from tests.helpers import serving

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


def _ensure_chromium() -> str | None:
    """Install Debian's chromium when missing (root only); return why not, or None."""
    if os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER):
        return None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "Chromium is not installed and apt-get as root is not available here"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "chromium", "chromium-driver"],
    ):
        try:
            subprocess.run(cmd, env=env, check=True, capture_output=True, timeout=600)
        except (subprocess.SubprocessError, OSError) as exc:
            return f"could not install Chromium ({' '.join(cmd)}): {exc}"
    return None


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    reason = _ensure_chromium()
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
