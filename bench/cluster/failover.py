"""The database failover drill's steps (`python -m bench.cluster --database-failover`):
payments at a steady rate through the API while the database's primary is
(a) SIGKILLed with its keeper (the host dies), then (c) its host comes back and it
rejoins as the standby; then (b) the new primary is cut off the network for a while
(it must stop taking writes before its standby is promoted: no two primaries) and,
mended, (c) rejoins as the standby too. Then the checks: every payment the API
acknowledged exists, no card charged twice, nothing unresolved after the settle time,
the wallet audit clean; and per fault the seconds until the shop took payments again."""

from __future__ import annotations

import threading
import time
from typing import Any

from bench.cluster.database import NODES, AutoFailover
from bench.cluster.drill import checked, narrator, settle, shopping
from bench.cluster.hosts import Cluster, running_cluster
from bench.cluster.network import Network
from bench.cluster.traffic import Shoppers, created_times


def run(net: Network, *, pay_rate: float, settle_s: float, hold_s: float) -> dict[str, Any]:
    say = narrator()
    with (
        running_cluster(net, workers_per_host=1, failover=True) as cluster,
        shopping(cluster, "failover") as (reader, shoppers),
    ):
        database = cluster.database
        assert database is not None
        say(f"{len(net.hosts)} hosts up; primary {database.primary()}, {database.states()}")
        stop = threading.Event()
        traffic = threading.Thread(target=shoppers.steady, args=(pay_rate, stop))
        traffic.start()
        faults: list[dict[str, Any]] = []
        try:
            time.sleep(5)
            say("(a) the primary SIGKILLed")
            killed = _killed(cluster, database, shoppers)
            faults.append(killed)
            say(f"{killed}; (c) its host back")
            faults.append(_rejoined(cluster, database, killed["host"], restart=True))
            time.sleep(5)
            say(f"(b) the primary cut off for {hold_s:g} s")
            cut = _cut_off(cluster, database, shoppers, hold_s)
            faults.append(cut)
            say(f"{cut}; (c) mended")
            faults.append(_rejoined(cluster, database, cut["host"], restart=False))
            time.sleep(5)
        finally:
            stop.set()
            traffic.join()
        say(f"{faults[-1]}; settling")
        results: dict[str, Any] = {"faults": faults, "pay_rate": pay_rate}
        results["settle_s"] = settle(reader, settle_s)
        say("checking against the provider's ledger")
        results.update(checked(cluster, reader, shoppers))
        results["acknowledged"] = len(shoppers.payment_ids)
        results["lost"] = sorted(set(shoppers.payment_ids) - set(created_times(reader.app)))
        return results


def _other(host: str) -> str:
    return next(h for h in NODES if h != host)


def _killed(cluster: Cluster, database: AutoFailover, shoppers: Shoppers) -> dict[str, Any]:
    """(a) The primary's host dies (every process SIGKILLed, nothing restarts it)."""
    host = database.primary()
    assert host is not None, database.states()
    at = time.monotonic()
    cluster.lost.add(host)  # no supervisor on a dead host
    database.kill(host)
    promoted = _until(lambda: database.primary() == _other(host), at, 120)
    flowed = _until(lambda: shoppers.first_acknowledged_after(at) is not None, at, 60)
    return {
        "fault": f"(a) primary {host} SIGKILLed",
        "host": host,
        "promoted_after_s": promoted,
        "flowed_again_s": shoppers.first_acknowledged_after(at) if flowed else None,
    }


def _cut_off(
    cluster: Cluster, database: AutoFailover, shoppers: Shoppers, hold_s: float
) -> dict[str, Any]:
    """(b) The primary's cable pulled: when it stopped taking writes (asked on its own
    host) and when its standby was promoted; mended after `hold_s`."""
    host = database.primary()
    assert host is not None, database.states()
    at = time.monotonic()
    cluster.net.cut(host)
    waits_for = database.sync_standbys(host)  # a commit there needs its standby's ack
    fenced = promoted = None
    while time.monotonic() - at < hold_s:
        if fenced is None and not database.takes_writes(host):
            fenced = round(time.monotonic() - at, 1)
        if promoted is None and database.primary() == _other(host):
            promoted = round(time.monotonic() - at, 1)
        time.sleep(0.25)
    cluster.net.mend(host)
    return {
        "fault": f"(b) primary {host} cut off for {hold_s:g} s",
        "host": host,
        "fenced_after_s": fenced,
        "promoted_after_s": promoted,
        "synchronous_standby_names_when_cut": waits_for,
        # the cut-off primary stopped taking writes before another was promoted
        "one_primary": fenced is not None and promoted is not None and fenced < promoted,
        "flowed_again_s": shoppers.first_acknowledged_after(at),
    }


def _rejoined(
    cluster: Cluster, database: AutoFailover, host: str, *, restart: bool
) -> dict[str, Any]:
    """(c) The old primary back: it follows the new one as its synchronous standby."""
    at = time.monotonic()
    if restart:
        cluster.lost.discard(host)
        database.restart(host)

    def in_sync() -> bool:
        states = database.states()
        return (
            states.get(host, ("",))[0] == "secondary"
            and states.get(_other(host), ("",))[0] == "primary"
        )

    return {
        "fault": f"(c) {host} {'restarted' if restart else 'mended'}",
        "host": host,
        "rejoined_as_standby_after_s": _until(in_sync, at, 180),
    }


def _until(predicate: Any, at: float, timeout_s: float) -> float | None:
    """Seconds from `at` until `predicate` holds (None: not within the timeout)."""
    while time.monotonic() - at < timeout_s:
        if predicate():
            return round(time.monotonic() - at, 1)
        time.sleep(0.25)
    return None
