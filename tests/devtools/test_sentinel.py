"""The throwaway Sentinel group: three Sentinels agree on the primary, the replica follows
it, and everything is gone afterwards."""

from __future__ import annotations

from pathlib import Path

from redis import Redis

from devtools.sentinel import sentinel_group


def test_a_group_of_three_sentinels_watching_a_primary_and_its_replica() -> None:
    with sentinel_group("orders") as group:
        primary, replica = group.redis
        assert group.primary_address() == (primary.host, primary.port)
        assert group.url.startswith("redis+sentinel://") and group.url.endswith("/orders/0")
        assert group.url.count(",") == 2  # three Sentinels
        info = Redis(replica.host, replica.port).info("replication")
        assert info["role"] == "slave" and info["master_port"] == primary.port
        workdir = Path(primary.workdir).parent
    assert not workdir.exists()
    assert all(server.proc is None for server in [*group.redis, *group.sentinels])
