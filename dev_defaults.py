"""What development runs on: the loopback ports of `make run`'s programs and the URLs of
its embedded servers (the defaults of DATABASE_URL, REDIS_URL, SANDBOX_URL, PUBLIC_URL
and SMTP_URL outside production), and the signs that a deployment is no development.
config.py reads them; devtools/run.py and devtools/supervisor_conf.py start on them."""

from __future__ import annotations

from collections.abc import Mapping

from providers.settings import ConfigError, integer

# Each settable (macOS's AirPlay takes 5000): the web program, the sandbox, and the
# embedded Redis, PostgreSQL and mail sink (.eml files in instance/mail) that `make run`
# starts when REDIS_URL, DATABASE_URL and SMTP_URL are unset.
DEV_PORTS = {
    "WEB_PORT": 5000,
    "SANDBOX_PORT": 8099,
    "REDIS_PORT": 6390,
    "POSTGRES_PORT": 5439,  # not 5432: a machine's own PostgreSQL may be there
    "MAIL_SINK_PORT": 8025,
}
EMBEDDED_DATABASE = "payments"  # the embedded cluster's database (data in instance/postgres)
APP_ROLE = "payments_app"  # the app's database role: owns nothing (models/privileges.py)
DEV_SMTP_URL = f"smtp://127.0.0.1:{DEV_PORTS['MAIL_SINK_PORT']}"  # refused in production
LIVE_KEY_PREFIXES = ("sk_live_", "rk_live_", "pk_live_")
LOOPBACK_HOSTS = ("127.", "localhost", "[::1]")


def dev_ports(env: Mapping[str, str]) -> dict[str, int]:
    """DEV_PORTS as set in `env`; ConfigError naming a variable that is no port."""
    ports = {name: integer(env, name, default) for name, default in DEV_PORTS.items()}
    for name, port in ports.items():
        if not 1 <= port <= 65535:
            raise ConfigError(f"{name} must be a TCP port (1-65535), got {port}")
    return ports


def dev_urls(env: Mapping[str, str]) -> dict[str, str]:
    """The development defaults of the URLs, on the ports of `dev_ports`."""
    ports = dev_ports(env)
    return {
        "DATABASE_URL": f"postgresql+psycopg://{APP_ROLE}@127.0.0.1:{ports['POSTGRES_PORT']}/"
        + EMBEDDED_DATABASE,
        "DATABASE_OWNER_URL": f"postgresql+psycopg://postgres@127.0.0.1:{ports['POSTGRES_PORT']}/"
        + EMBEDDED_DATABASE,
        "REDIS_URL": f"redis://127.0.0.1:{ports['REDIS_PORT']}/0",
        "SANDBOX_URL": f"http://127.0.0.1:{ports['SANDBOX_PORT']}",
        "PUBLIC_URL": f"http://127.0.0.1:{ports['WEB_PORT']}",
        "SMTP_URL": f"smtp://127.0.0.1:{ports['MAIL_SINK_PORT']}",
    }


def production_signs(env: Mapping[str, str]) -> list[str]:
    """The settings that only a live deployment has: live Stripe keys, and https
    addresses of providers or of the shop itself (development talks to the sandbox)."""
    signs = [name for name, value in env.items() if value.startswith(LIVE_KEY_PREFIXES)]
    for name, value in env.items():
        if not (name.endswith("_API_BASE") or name == "PUBLIC_URL"):
            continue
        host = value.removeprefix("https://")
        if value.startswith("https://") and not host.startswith(LOOPBACK_HOSTS):
            signs.append(name)
    return sorted(set(signs))
