"""REDIS_URL: one Redis server, or a group watched by Redis Sentinel.

    redis://[[user]:password@]host:6379/0                 one server
    redis+sentinel://[[user]:password@]host1:26379,host2:26379,host3/mymaster/0
    rediss+sentinel://...                                  the same, TLS to Redis

A Sentinel URL lists the Sentinels (port 26379 when omitted), then the name of the
monitored group and the database number (0 when omitted). The user and password are
the Redis servers'; `?sentinel_password=...` is the Sentinels' own, when they have one.

Discovery is redis-py's: each new connection asks the Sentinels for the current
primary, and a connection to a primary that was demoted or died fails, so the next
command (redis-py retries a failed connection, and every caller here survives a Redis
error) reaches the promoted replica. Nothing here decides a failover.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote

from redis import Redis
from redis.sentinel import Sentinel

SENTINEL_SCHEMES = {"redis+sentinel": False, "rediss+sentinel": True}  # scheme -> TLS
DEFAULT_SENTINEL_PORT = 26379


@dataclass(frozen=True)
class SentinelUrl:
    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_password: str | None = None
    ssl: bool = False


def is_sentinel_url(url: str) -> bool:
    return url.split("://", 1)[0].lower() in SENTINEL_SCHEMES


def parse_sentinel_url(url: str) -> SentinelUrl:
    """The parts of a Sentinel URL; ValueError saying what is wrong (never the password)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SENTINEL_SCHEMES:
        raise ValueError("a Sentinel URL starts with redis+sentinel:// or rediss+sentinel://")
    rest, _, query = rest.partition("?")
    netloc, _, path = rest.partition("/")
    userinfo, at, hosts = netloc.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username, password = unquote(user) or None, unquote(secret) if colon else None
    sentinels = tuple(_host_port(part) for part in hosts.split(","))
    parts = [unquote(p) for p in path.split("/") if p]
    if not parts:
        raise ValueError("a Sentinel URL names the monitored group: .../mymaster/0")
    if len(parts) > 2:
        raise ValueError("a Sentinel URL's path is /<group>[/<db>]")
    db = 0
    if len(parts) == 2:
        if not parts[1].isdigit():
            raise ValueError("the database number must be an integer")
        db = int(parts[1])
    options = parse_qs(query, keep_blank_values=True)
    unknown = set(options) - {"sentinel_password"}
    if unknown:
        raise ValueError(f"unknown Sentinel URL option(s): {', '.join(sorted(unknown))}")
    return SentinelUrl(
        sentinels=sentinels,
        service=parts[0],
        db=db,
        username=username,
        password=password,
        sentinel_password=options.get("sentinel_password", [None])[-1],
        ssl=SENTINEL_SCHEMES[scheme.lower()],
    )


def _host_port(part: str) -> tuple[str, int]:
    part = part.strip()
    if part.startswith("["):  # [IPv6]:port
        host, _, port = part[1:].partition("]")
        port = port.removeprefix(":")
    else:
        host, _, port = part.rpartition(":") if ":" in part else (part, "", "")
    if not host:
        raise ValueError("every Sentinel address needs a host")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        # No part of the URL in the message: a password with an unescaped "/" or "?"
        # lands here as a "host:port" (percent-encode it: %2F, %3F).
        raise ValueError(
            "a Sentinel address has a port that is not one (a password with '/', '?' or "
            "'#' must be percent-encoded)"
        )
    return host, int(port) if port else DEFAULT_SENTINEL_PORT


def redis_from_url(url: str, **options: Any) -> Redis:
    """A client for REDIS_URL: `Redis.from_url`, or the Sentinel group's current primary.

    `options` (timeouts) apply to the Redis servers and to the Sentinels alike."""
    if not is_sentinel_url(url):
        return Redis.from_url(url, **options)
    parsed = parse_sentinel_url(url)
    sentinel = Sentinel(
        list(parsed.sentinels),
        sentinel_kwargs={**options, "password": parsed.sentinel_password},
        **options,
    )
    return sentinel.master_for(
        parsed.service,
        db=parsed.db,
        username=parsed.username,
        password=parsed.password,
        ssl=parsed.ssl,
    )
