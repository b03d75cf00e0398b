"""`python -m bench.cluster`: the system on several hosts (Linux network namespaces on this
machine, root only), with a host lost, a Redis failover and a web host stopped under
traffic; 0 double charges and 0 unresolved payments after a settle time, and payments
settled per second with 1, 2 and 3 worker hosts. Last line: one JSON object of figures.

    python -m bench.cluster [--smoke] [--workers-per-host 1] [--pay-rate 6] [--backlog 90]
    python -m bench.cluster --database-failover [--pay-rate 6] [--hold-s 30]

`--database-failover`: the database as a primary and a synchronous standby under
pg_auto_failover, its primary SIGKILLed, then cut off the network, each time rejoining
as the standby (bench/cluster/failover.py): 0 acknowledged payments lost.

Without root, iproute2 (or, for the failover, Debian's pg_auto_failover) it prints why
and exits 0 (skipped, not failed).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from bench.cluster.network import unavailable

SCALING_GOAL = 2.4  # 3 worker hosts against 1: the provider's latency makes this I/O bound


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="one fault (Redis), no scaling")
    parser.add_argument(
        "--workers-per-host", type=int, default=1, help="payment workers on each worker host"
    )
    parser.add_argument("--pay-rate", type=float, default=6.0, help="payments per second")
    parser.add_argument("--backlog", type=int, default=90, help="payments per scaling step")
    parser.add_argument("--settle-s", type=float, default=120.0)
    parser.add_argument(
        "--database-failover", action="store_true", help="the database failover drill"
    )
    parser.add_argument("--hold-s", type=float, default=30.0, help="how long (b)'s cut lasts")
    args = parser.parse_args(argv)
    if args.database_failover:
        return _failover(args.pay_rate, args.settle_s, args.hold_s)
    reason = unavailable()
    if reason:
        return _skipped("cluster drill", reason)
    from bench.cluster import drill
    from bench.cluster.hosts import HOSTS
    from bench.common import write_results

    results = _on_hosts(
        HOSTS,
        lambda net: drill.run(
            net,
            smoke=args.smoke,
            workers_per_host=args.workers_per_host,
            pay_rate=args.pay_rate,
            backlog=args.backlog,
            settle_s=args.settle_s,
        ),
    )
    figures = _figures(results)
    _print(results, figures)
    print(f"results in {write_results('cluster-smoke' if args.smoke else 'cluster', results)}")
    print(json.dumps(figures))
    return 0 if figures["ok"] else 1


def _skipped(what: str, reason: str) -> int:
    print(f"{what} skipped: {reason}")
    print(json.dumps({"skipped": reason}))
    return 0


def _on_hosts(hosts: list[str], run: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """`run(net)` on a network of these hosts, from the client host; the namespaces
    removed afterwards, whatever happened."""
    from bench.cluster.network import Network

    net = Network.create(hosts)
    try:
        net.enter("client")  # this process is the client host from here on
        return run(net)
    finally:
        net.remove()
        print(f"network {net.prefix}: namespaces removed", flush=True)


def _figures(results: dict[str, Any]) -> dict[str, Any]:
    scaling = results.get("scaling", {})
    figures: dict[str, Any] = {
        "double_charges": results["double_charges"],
        "unresolved": results["unresolved"],
        "violations": len(results["violations"]),
        "settle_s": results["settle_s"],
        "payments": results["payments"],
        "flowed_again_s": {f["fault"]: f["flowed_again_s"] for f in results["faults"]},
        **{f"settled_per_s_{n}_hosts": scaling[str(n)]["per_s"] for n in (1, 2, 3) if scaling},
        "scaling_3_vs_1": scaling.get("scaling_3_vs_1"),
        "goal_scaling_3_vs_1": SCALING_GOAL,
    }
    figures["ok"] = (
        figures["double_charges"] == 0 and figures["unresolved"] == 0 and not figures["violations"]
    )
    return figures


def _print(results: dict[str, Any], figures: dict[str, Any]) -> None:
    for fault in results["faults"]:
        details = ", ".join(f"{k} {v}" for k, v in fault.items() if k != "fault")
        print(f"{fault['fault']}: {details}")
    for n in (1, 2, 3):
        key = f"settled_per_s_{n}_hosts"
        if key in figures:
            print(f"payments settled per second, {n} worker host(s): {figures[key]}")
    if figures["scaling_3_vs_1"] is not None:
        met = "met" if figures["scaling_3_vs_1"] >= SCALING_GOAL else "NOT met"
        print(f"3 hosts vs 1: {figures['scaling_3_vs_1']}x (goal {SCALING_GOAL}x: {met})")
    print(
        f"payments {figures['payments']}, double charges {figures['double_charges']}, "
        f"unresolved {figures['unresolved']}, settled in {figures['settle_s']} s, "
        f"client retries {results['client_retries']}, gave up {results['client_gave_up']}"
    )
    for violation in results["violations"]:
        print(f"VIOLATION {violation}")


def _failover(pay_rate: float, settle_s: float, hold_s: float) -> int:
    from bench.cluster import database

    reason = unavailable() or database.unavailable()
    if reason:
        return _skipped("database failover drill", reason)
    from bench.cluster import failover
    from bench.cluster.hosts import FAILOVER_HOSTS
    from bench.common import write_results

    results = _on_hosts(
        FAILOVER_HOSTS,
        lambda net: failover.run(net, pay_rate=pay_rate, settle_s=settle_s, hold_s=hold_s),
    )
    faults = results["faults"]
    figures = {
        "acknowledged": results["acknowledged"],
        "lost": len(results["lost"]),
        "double_charges": results["double_charges"],
        "unresolved": results["unresolved"],
        "violations": len(results["violations"]),
        "settle_s": results["settle_s"],
        **{
            f"{step}_{name}": fault[name]
            for step, fault in zip(("a", "c_after_a", "b", "c_after_b"), faults, strict=True)
            for name in fault
            if name.endswith("_s")
        },
        "one_primary": faults[2]["one_primary"],
    }
    rejoined = all(f.get("rejoined_as_standby_after_s") is not None for f in faults[1::2])
    flowed = all(f.get("flowed_again_s") is not None for f in faults[0::2])
    figures["ok"] = (
        figures["lost"] == 0
        and figures["double_charges"] == 0
        and figures["unresolved"] == 0
        and not figures["violations"]
        and figures["one_primary"]
        and rejoined
        and flowed
    )
    for fault in faults:
        print(fault)
    for violation in results["violations"]:
        print(f"VIOLATION {violation}")
    print(f"results in {write_results('cluster-failover', results)}")
    print(json.dumps(figures))
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
