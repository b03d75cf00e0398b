"""`python -m bench.cluster`: the system on several hosts (Linux network namespaces on this
machine, root only), with a host lost, a Redis failover and a web host stopped under
traffic; 0 double charges and 0 unresolved payments after a settle time, and payments
settled per second with 1, 2 and 3 worker hosts. Last line: one JSON object of figures.

    python -m bench.cluster [--smoke] [--workers-per-host 1] [--pay-rate 6] [--backlog 90]

Without root or iproute2 it prints why and exits 0 (skipped, not failed).
"""

from __future__ import annotations

import argparse
import json
import sys
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
    args = parser.parse_args(argv)
    reason = unavailable()
    if reason:
        print(f"cluster drill skipped: {reason}")
        print(json.dumps({"skipped": reason}))
        return 0
    from bench.cluster import drill
    from bench.cluster.hosts import HOSTS
    from bench.cluster.network import Network
    from bench.common import write_results

    net = Network.create(HOSTS)
    try:
        net.enter("client")  # this process is the client host from here on
        results = drill.run(
            net,
            smoke=args.smoke,
            workers_per_host=args.workers_per_host,
            pay_rate=args.pay_rate,
            backlog=args.backlog,
            settle_s=args.settle_s,
        )
    finally:
        net.remove()
        print(f"network {net.prefix}: namespaces removed", flush=True)
    figures = _figures(results)
    _print(results, figures)
    print(f"results in {write_results('cluster-smoke' if args.smoke else 'cluster', results)}")
    print(json.dumps(figures))
    return 0 if figures["ok"] else 1


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


if __name__ == "__main__":
    sys.exit(main())
