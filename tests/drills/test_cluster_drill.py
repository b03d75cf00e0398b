"""Smoke version of the cluster drill: hosts in network namespaces, the Redis primary
stopped under traffic, nothing charged twice or left unresolved. Skipped, with the
reason, where namespaces cannot be made (not root, no iproute2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cluster.network import unavailable

PROJECT_DIR = Path(__file__).resolve().parents[2]


def test_a_redis_failover_across_hosts_loses_nothing() -> None:
    reason = unavailable()
    if reason:
        pytest.skip(f"cluster drill: {reason}")
    # Its own process: the drill moves itself into the client host's namespace.
    done = subprocess.run(
        [sys.executable, "-m", "bench.cluster", "--smoke", "--workers-per-host", "1"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["double_charges"] == 0 and figures["unresolved"] == 0
    assert figures["violations"] == 0 and figures["payments"] > 0
    assert figures["flowed_again_s"]["Redis primary stopped"] is not None  # flowed again
    assert "promoted_after_s" in done.stdout  # the Sentinels did promote the replica
    prefix = done.stdout.split("network ", 1)[1].split(":", 1)[0]
    assert not [ns for ns in _namespaces() if ns.startswith(f"{prefix}-")]  # all removed


def _namespaces() -> list[str]:
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.strip()]
