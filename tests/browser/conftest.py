"""Headless Chromium (Debian's chromium + chromium-driver) against the app on a live server."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from tests.helpers import serving

PROJECT_DIR = Path(__file__).resolve().parents[2]
ARTIFACTS = PROJECT_DIR / "test-artifacts"
# axe-core, the accessibility engine, from the npm registry (its own package, pinned).
AXE_VERSION = "4.14.1"
AXE_CACHE = PROJECT_DIR / ".venv" / f"axe-core-{AXE_VERSION}.min.js"
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


@pytest.fixture
def browser(chromium: Any) -> Any:
    """The session's Chromium at its desktop size: a test that narrowed it to a phone's
    must not hide the next one's navigation (the order of tests varies by worker)."""
    chromium.set_window_size(1200, 900)
    return chromium


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
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


@pytest.fixture(scope="session")
def axe_script() -> str:
    """axe-core's script, fetched once with npm into .venv (make clean removes it)."""
    if not AXE_CACHE.exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed: axe-core cannot be fetched")
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(
                [npm, "pack", f"axe-core@{AXE_VERSION}", "--pack-destination", tmp, "--silent"],
                check=True,
                capture_output=True,
                timeout=300,
            )
            tarball = next(Path(tmp).glob("axe-core-*.tgz"))
            with tarfile.open(tarball) as archive:
                member = archive.extractfile("package/axe.min.js")
                assert member is not None
                AXE_CACHE.write_bytes(member.read())
    return AXE_CACHE.read_text()
