"""The database failover drill's own parts (the drill itself runs by hand, about two and a
half minutes: docs/benchmarks.md has its three runs): where pg_auto_failover is missing
it says what to install and skips, exit 0; the app's URL names both nodes, asks for the
one that takes writes and bounds every wait on a host that vanished."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from bench.cluster import __main__ as cluster_main
from bench.cluster import database
from bench.cluster.network import Network


def test_without_pg_auto_failover_the_drill_says_what_is_missing_and_skips(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = shutil.which
    monkeypatch.setattr(
        database.shutil, "which", lambda name: None if name == "pg_autoctl" else real(name)
    )
    reason = database.unavailable()
    assert reason is not None and "postgresql-15-auto-failover" in reason
    monkeypatch.setattr(cluster_main, "unavailable", lambda: None)  # namespaces or not
    assert cluster_main.main(["--database-failover"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[0] == f"database failover drill skipped: {reason}"
    assert json.loads(printed[-1]) == {"skipped": reason}


def test_the_apps_url_names_both_nodes_and_bounds_every_wait(tmp_path: Path) -> None:
    net = Network(prefix="pc0000", subnet="10.231.0")
    for index, host in enumerate(["client", "monitor", "db-1", "db-2"], start=1):
        net.hosts[host] = index
    group: Any = database.AutoFailover(net, tmp_path, {})
    url = urlsplit(group.url)
    query = parse_qs(url.query)
    assert url.scheme == "postgresql+psycopg" and url.path == "/payments"
    assert query["host"] == ["10.231.0.13:55431", "10.231.0.14:55432"]
    assert query["target_session_attrs"] == ["read-write"]
    assert query["connect_timeout"] == ["2"] and query["tcp_user_timeout"] == ["5000"]
    assert {"keepalives_idle", "keepalives_interval", "keepalives_count"} <= query.keys()
    # the fencing comes before the promotion: no two primaries take writes at once
    monitor = database.DRILL_TIMEOUTS
    promote_after_ms = int(monitor["pgautofailover.node_considered_unhealthy_timeout"]) + int(
        monitor["pgautofailover.primary_demote_timeout"]
    )
    assert promote_after_ms > database.NETWORK_PARTITION_TIMEOUT_S * 1000
