"""The production web tier's nginx (deploy/nginx/payments.conf), run for tests and the
cluster drill: the checked-in site, with only its listen address and its upstream
(gunicorn's address) replaced, inside a main config of its own in a temporary folder.

Needs Debian's nginx (`make test` installs it as root; docs/testing.md)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devtools.servers import running

SITE = Path(__file__).resolve().parent.parent / "deploy" / "nginx" / "payments.conf"
NGINX = "/usr/sbin/nginx"
DEPLOYED_LISTEN = "    listen 80;\n"
DEPLOYED_UPSTREAM = "    server 127.0.0.1:8000;\n"


def nginx_binary() -> str | None:
    return shutil.which("nginx") or (NGINX if Path(NGINX).exists() else None)


def site(listen: str, upstream: str) -> str:
    """The checked-in site listening on `listen` (host:port), proxying to `upstream`."""
    text = SITE.read_text()
    if DEPLOYED_LISTEN not in text or DEPLOYED_UPSTREAM not in text:
        raise ValueError(f"{SITE} no longer has {DEPLOYED_LISTEN!r} and {DEPLOYED_UPSTREAM!r}")
    return text.replace(DEPLOYED_LISTEN, f"    listen {listen};\n").replace(
        DEPLOYED_UPSTREAM, f"    server {upstream};\n"
    )


def main_config(folder: Path, listen: str, upstream: str) -> str:
    """A whole nginx.conf: the site inside an http block, every file in `folder`."""
    (folder / "site.conf").write_text(site(listen, upstream))
    temp = {name: folder / name for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")}
    for path in temp.values():
        path.mkdir(exist_ok=True)
    # As root, nginx's workers would become `nobody`, who cannot write in our folder.
    user = "user root;\n" if os.geteuid() == 0 else ""
    return (
        f"{user}worker_processes 1;\npid {folder / 'nginx.pid'};\n"
        f"error_log {folder / 'error.log'} warn;\n"
        "events { worker_connections 1024; }\n"
        "http {\n"
        "    access_log off;\n"
        f"    client_body_temp_path {temp['client_body']};\n"
        f"    proxy_temp_path {temp['proxy']};\n"
        f"    fastcgi_temp_path {temp['fastcgi']};\n"
        f"    uwsgi_temp_path {temp['uwsgi']};\n"
        f"    scgi_temp_path {temp['scgi']};\n"
        f"    include {folder / 'site.conf'};\n"
        "}\n"
    )


def command(folder: Path, listen: str, upstream: str) -> list[str]:
    """The nginx command (foreground) for a config written into `folder`."""
    binary = nginx_binary()
    if binary is None:
        raise FileNotFoundError("nginx is not installed (Debian: apt-get install nginx)")
    (folder / "nginx.conf").write_text(main_config(folder, listen, upstream))
    return [binary, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-g", "daemon off;"]


@contextmanager
def nginx_in_front(port: int, upstream: str) -> Iterator[str]:
    """nginx on 127.0.0.1:`port` in front of `upstream` for the block; yields its URL."""
    folder = Path(tempfile.mkdtemp(prefix="test-nginx-"))
    try:
        with running(command(folder, f"127.0.0.1:{port}", upstream), port):
            yield f"http://127.0.0.1:{port}"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
