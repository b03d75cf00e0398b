"""The cluster's database in its production shape: a primary and a synchronous standby,
failed over by pg_auto_failover (Debian's postgresql-15-auto-failover, `pg_autoctl`):

    monitor   the pg_auto_failover monitor (a PostgreSQL of its own) deciding who is
              primary from every node's health and reports
    db-1/2    a node each: PostgreSQL and its keeper (`pg_autoctl run`), the first
              created the primary, the second its standby (streaming replication,
              `synchronous_standby_names = ANY 1 (standby)`, `synchronous_commit = on`)

The app reaches the primary by itself: both nodes in one libpq URL with
`target_session_attrs=read-write`, and timeouts so that a connection to a host that is
cut off fails in seconds (docs/operations.md). Time is compressed for the drill (the
monitor's health checks and the keeper's partition timeout, `DRILL_TIMEOUTS`), keeping
the order that prevents two primaries: a node cut off from the monitor and its standby
stops taking writes (`network_partition_timeout`) before the monitor promotes the
standby (`node_considered_unhealthy_timeout` + `primary_demote_timeout`)."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.cluster.network import Network
from bench.drills.stack import Program

NODES = ("db-1", "db-2")
# A port each: every host's Unix socket is in Debian's one /var/run/postgresql (the
# hosts share the file system), beside the machine's own PostgreSQL on 5432.
PORTS = {"monitor": 55430, "db-1": 55431, "db-2": 55432}
DATABASE = "payments"
# The monitor's settings (ALTER SYSTEM on it): health checked every second, a node
# unhealthy after 4 s, a primary given 8 s to step down before its standby is promoted.
DRILL_TIMEOUTS = {
    "pgautofailover.health_check_period": "1000",
    "pgautofailover.health_check_timeout": "1000",
    "pgautofailover.health_check_max_retries": "1",
    "pgautofailover.health_check_retry_delay": "500",
    "pgautofailover.node_considered_unhealthy_timeout": "4000",
    "pgautofailover.primary_demote_timeout": "8000",
}
# Each keeper's: a primary that reaches neither the monitor nor its standby for this long
# stops taking writes (it demotes itself): less than the 4 + 8 s above.
NETWORK_PARTITION_TIMEOUT_S = 5
# How the app's connections notice a host that is gone (libpq's own parameters).
CONNECTION_OPTIONS = (
    "target_session_attrs=read-write&connect_timeout=2&keepalives_idle=5"
    "&keepalives_interval=1&keepalives_count=3&tcp_user_timeout=5000"
)
WRITABLE = ("primary", "wait_primary", "single")


def pg_bin_dir() -> Path | None:
    """Debian's PostgreSQL binaries that have the pgautofailover extension beside them."""
    for control in sorted(glob.glob("/usr/share/postgresql/*/extension/pgautofailover.control")):
        version = control.split("/")[4]
        bin_dir = Path(f"/usr/lib/postgresql/{version}/bin")
        if (bin_dir / "pg_ctl").exists():
            return bin_dir
    return None


def unavailable() -> str | None:
    """Why this machine cannot run the database failover drill, or None."""
    if shutil.which("pg_autoctl") is None or pg_bin_dir() is None:
        return (
            "pg_auto_failover is not installed (Debian's postgresql-15-auto-failover: "
            "`make system-packages` installs it as root)"
        )
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no `postgres` account to run PostgreSQL as"
    return None


@dataclass
class AutoFailover:
    """The monitor and the two nodes, each a Program on its host."""

    net: Network
    tmp: Path
    env: dict[str, str]
    programs: dict[str, Program] = field(default_factory=dict)  # host -> its pg_autoctl

    @property
    def url(self) -> str:
        hosts = "&".join(f"host={self.net.address(h)}:{PORTS[h]}" for h in NODES)
        return f"postgresql+psycopg://postgres@/{DATABASE}?{hosts}&{CONNECTION_OPTIONS}"

    @property
    def monitor_uri(self) -> str:
        address = self.net.address("monitor")
        port = PORTS["monitor"]
        return f"postgres://autoctl_node@{address}:{port}/pg_auto_failover?sslmode=disable"

    def _as_postgres(self, host: str, *cmd: str) -> list[str]:
        home = self.tmp / f"{host}-pgaf"
        return [
            *self.net.run_in(host),
            *("runuser", "-u", "postgres", "--", "env"),
            f"XDG_CONFIG_HOME={home}/config",
            f"XDG_DATA_HOME={home}/data",
            *cmd,
        ]

    def _pgdata(self, host: str) -> Path:
        return self.tmp / f"{host}-pgaf" / "pgdata"

    def _autoctl(self, host: str, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            self._as_postgres(host, "pg_autoctl", *args),
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"pg_autoctl {args[0]} on {host}: {done.stderr.strip()[-800:]}")
        return done.stdout

    def _run(self, host: str) -> None:
        program = Program(
            f"{host}/pg_autoctl",
            self._as_postgres(host, "pg_autoctl", "run", "--pgdata", str(self._pgdata(host))),
            self.tmp / f"{host}-pg_autoctl.log",
        )
        self.programs[host] = program
        program.start(self.env)

    def _psql(self, host: str, sql: str, database: str = DATABASE) -> str:
        bin_dir = pg_bin_dir()
        assert bin_dir is not None
        done = subprocess.run(
            [
                *self.net.run_in(host),
                str(bin_dir / "psql"),
                *("-h", self.net.address(host), "-p", str(PORTS[host]), "-U", "postgres"),
                *("-d", database, "-AtX", "-c", sql),
            ],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if done.returncode != 0:
            raise RuntimeError(f"psql on {host}: {done.stderr.strip()[-300:]}")
        return done.stdout.strip()

    def start(self) -> None:
        """The monitor, then the primary, then its standby; back when the standby is in
        sync (a secondary)."""
        bin_dir = pg_bin_dir()
        assert bin_dir is not None
        pgctl = str(bin_dir / "pg_ctl")
        for host in ("monitor", *NODES):
            home = self.tmp / f"{host}-pgaf"
            home.mkdir()
            shutil.chown(home, "postgres", "postgres")
        common = ("--auth", "trust", "--no-ssl", "--pgctl", pgctl)
        self._autoctl(
            "monitor",
            *("create", "monitor", "--pgdata", str(self._pgdata("monitor"))),
            *("--hostname", self.net.address("monitor"), "--pgport", str(PORTS["monitor"])),
            *common,
        )
        self._open_to_the_hosts(self._pgdata("monitor"))
        self._run("monitor")
        self._wait(lambda: self._reachable("monitor", "pg_auto_failover"), 60)
        for name, value in DRILL_TIMEOUTS.items():
            self._psql("monitor", f"ALTER SYSTEM SET {name} = '{value}'", "pg_auto_failover")
        self._psql("monitor", "SELECT pg_reload_conf()", "pg_auto_failover")
        for index, host in enumerate(NODES):
            pgdata = self._pgdata(host)
            self._autoctl(
                host,
                *("create", "postgres", "--pgdata", str(pgdata), "--dbname", DATABASE),
                *("--hostname", self.net.address(host), "--name", host, *common),
                *("--pgport", str(PORTS[host])),
                *("--monitor", self.monitor_uri),
            )
            self._autoctl(
                host,
                *("config", "set", "--pgdata", str(pgdata)),
                *("timeout.network_partition_timeout", str(NETWORK_PARTITION_TIMEOUT_S)),
            )
            if index == 0:
                self._open_to_the_hosts(pgdata)
            self._run(host)
            wanted = ("single", "wait_primary") if index == 0 else ("secondary",)
            # pg_basebackup waits for a checkpoint on the primary: ask for one.
            self._wait(lambda h=host, w=wanted: self._checkpointed(h, w), 120)

    def _open_to_the_hosts(self, pgdata: Path) -> None:
        """Every host of the drill's network may connect (trust, as on loopback), and
        enough connections for the drill; the standby's base backup copies both."""
        network = ".".join(self.net.address("client").split(".")[:3]) + ".0/24"
        with open(pgdata / "pg_hba.conf", "a") as hba:
            hba.write(f"host all all {network} trust\n")
        with open(pgdata / "postgresql.conf", "a") as conf:
            # A standby that went silent ends its walsender in 3 s: a primary cut off from
            # it and the monitor then has no replication left and demotes itself (below
            # the network partition timeout).
            conf.write("max_connections = 300\nfsync = off\nwal_sender_timeout = '3s'\n")

    def _checkpointed(self, host: str, wanted: tuple[str, ...]) -> bool:
        primary = self.primary()
        if primary is not None and primary != host:
            with contextlib.suppress(RuntimeError):
                self._psql(primary, "CHECKPOINT")
        return self.states().get(host, ("", ""))[0] in wanted

    def _reachable(self, host: str, database: str) -> bool:
        try:
            self._psql(host, "SELECT 1", database)
        except (RuntimeError, subprocess.TimeoutExpired):
            return False
        return True

    def states(self) -> dict[str, tuple[str, str]]:
        """Each node's (reported, assigned) state, as the monitor has them."""
        try:
            rows = self._psql(
                "monitor",
                "SELECT nodename, reportedstate, goalstate FROM pgautofailover.node",
                "pg_auto_failover",
            )
        except (RuntimeError, subprocess.TimeoutExpired):
            return {}
        found = [line.split("|") for line in rows.splitlines()]
        return {row[0]: (row[1], row[2]) for row in found if len(row) == 3}

    def primary(self) -> str | None:
        """The node the monitor has as primary (taking writes, and meant to), if any: a
        node cut off keeps its last report, but not its assignment."""
        found = [
            host
            for host, (reported, assigned) in self.states().items()
            if reported in WRITABLE and assigned in WRITABLE
        ]
        return found[0] if len(found) == 1 else None

    def sync_standbys(self, host: str) -> str | None:
        """The node's synchronous_standby_names (asked on its own host; None: no answer):
        not empty, a commit there waits for its standby."""
        try:
            return self._psql(host, "SHOW synchronous_standby_names")
        except (RuntimeError, subprocess.TimeoutExpired):
            return None

    def takes_writes(self, host: str) -> bool:
        """Whether the node's PostgreSQL answers as a primary (asked on its own host)."""
        try:
            return self._psql(host, "SELECT pg_is_in_recovery()") == "f"
        except (RuntimeError, subprocess.TimeoutExpired):
            return False

    def kill(self, host: str) -> None:
        """The host dies: every process in its namespace SIGKILLed (keeper, PostgreSQL)."""
        listed = subprocess.run(
            ["ip", "netns", "pids", self.net.ns(host)], capture_output=True, text=True
        )
        for pid in listed.stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        self.programs[host].wait_stopped()

    def restart(self, host: str) -> None:
        """The host is back: its keeper runs again (and rejoins as the standby)."""
        self._run(host)

    def stop(self) -> None:
        for host in self.programs:
            self.kill(host)

    @staticmethod
    def _wait(predicate: Any, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while not predicate():
            if time.monotonic() > deadline:
                raise TimeoutError("pg_auto_failover did not get there in time")
            time.sleep(0.5)
