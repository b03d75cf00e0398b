"""REDIS_URL as a Sentinel group: the URL's parts, and a client that follows a failover
(a real primary stopped under three real Sentinels)."""

from __future__ import annotations

import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from config import ConfigError, settings_from_env
from devtools.sentinel import sentinel_group
from resilience.redis_url import SentinelUrl, is_sentinel_url, parse_sentinel_url, redis_from_url
from tests.redis_support import fail_over


def test_a_sentinel_url_names_the_sentinels_the_group_and_the_database() -> None:
    parsed = parse_sentinel_url("redis+sentinel://10.0.0.1:26380,10.0.0.2,[::1]:26381/mymaster/3")
    assert parsed == SentinelUrl(
        sentinels=(("10.0.0.1", 26380), ("10.0.0.2", 26379), ("::1", 26381)),
        service="mymaster",
        db=3,
    )
    assert parse_sentinel_url("redis+sentinel://h/payments").db == 0


def test_credentials_and_tls() -> None:
    parsed = parse_sentinel_url(
        "rediss+sentinel://app:p%40ss@h1:26379/mymaster/0?sentinel_password=s3cret"
    )
    assert (parsed.username, parsed.password, parsed.sentinel_password) == ("app", "p@ss", "s3cret")
    assert parsed.ssl
    assert parse_sentinel_url("redis+sentinel://:only-pw@h1/g").password == "only-pw"
    assert parse_sentinel_url("redis+sentinel://:only-pw@h1/g").username is None


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis://h:6379/0", "starts with redis\\+sentinel"),
        ("redis+sentinel://h1,h2", "names the monitored group"),
        ("redis+sentinel://h1/g/zero", "must be an integer"),
        ("redis+sentinel://h1/g/0/extra", "path is"),
        ("redis+sentinel://h1:99999/g", "port that is not one"),
        ("redis+sentinel://h1,:26379/g", "needs a host"),
        ("redis+sentinel://h1/g?password=x", "unknown Sentinel URL option"),
    ],
)
def test_a_malformed_url_says_what_is_wrong(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_sentinel_url(url)


def test_the_settings_refuse_a_malformed_sentinel_url_without_echoing_it() -> None:
    assert is_sentinel_url("REDIS+SENTINEL://h/g") and not is_sentinel_url("redis://h")
    with pytest.raises(ConfigError, match="names the monitored group") as refused:
        settings_from_env({"REDIS_URL": "redis+sentinel://:hunter2@h1"})
    assert "hunter2" not in str(refused.value)


def test_a_client_follows_the_failover_to_the_promoted_replica() -> None:
    with sentinel_group() as group:
        client = redis_from_url(group.url, socket_connect_timeout=1.0, socket_timeout=2.0)
        client.set("payment:1", "succeeded")
        assert client.wait(1, 2000) == 1  # the replica has it: replication is asynchronous
        first = client.connection_pool.get_master_address()  # type: ignore[attr-defined]  # a Sentinel pool's method, untyped
        new = fail_over(group)
        errors = 0
        deadline = time.monotonic() + 20
        while True:  # a command may fail while the old primary's connections are closed
            try:
                assert client.get("payment:1") == b"succeeded"
                break
            except RedisConnectionError:
                errors += 1
                assert time.monotonic() < deadline, "the client never reached the new primary"
                time.sleep(0.2)
        assert client.connection_pool.get_master_address() == new != first  # type: ignore[attr-defined]  # a Sentinel pool's method, untyped
        client.set("after", "failover")  # written to the new primary, not a read-only replica
        assert errors <= 5


@pytest.mark.parametrize(
    "url",
    [
        "redis+sentinel://user:s3cr/etXYZ@h1:26379/mymaster/0",
        "redis+sentinel://user:s3cr?etXYZ@h1:26379/mymaster/0",
        "redis+sentinel://user:pw@h1:26379/mymaster/s3cretXYZ",
    ],
)
def test_a_refused_url_never_echoes_its_password(url: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_sentinel_url(url)
    assert not any(piece in str(refused.value) for piece in ("s3cr", "XYZ"))
