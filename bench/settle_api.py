"""bench.settle counted from the customer (`--through-api`): the shop's customers
(bench/shoppers.py, a process of its own) create orders and pay them through the JSON
API at a steady rate, and ask for each payment as the status page does until it is
final; the figure is the payments settled per second from the first customer's request
to the last payment's final transition, and each payment's time from its customer's
order request to its final transition."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.drills.stack import PROJECT_DIR, Stack, Sweeper, api_customer
from bench.settle_meter import FOLLOW_UPS, Meter, counted, final_at

CUSTOMERS = 40  # API tokens the customers take turns with
WARMUP = 60  # payments before the measured ones, not counted (at WARMUP_RATE a second)
WARMUP_RATE = 30.0


def customers(sweeper: Sweeper, count: int, folder: Path) -> Path:
    """`count` customers created as an operator would (`flask customers create`), the
    catalog seeded; their API tokens in a file, one a line."""
    sweeper.cli("seed")
    tokens = [api_customer(sweeper, f"shopper-{i}@example.com") for i in range(count)]
    path = folder / "tokens.txt"
    path.write_text("\n".join(tokens) + "\n")
    return path


def shoppers(web_url: str, tokens: Path, count: int, rate: float, timeout_s: float) -> Any:
    """Run bench/shoppers.py to the end; its JSON."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "bench.shoppers", web_url, "--tokens", str(tokens)),
            *("--payments", str(count), "--rate", str(rate), "--timeout-s", str(timeout_s)),
        ],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def measured(
    web_url: str, tokens: Path, count: int, rate: float, timeout_s: float, meter_of: Any
) -> tuple[Any, dict[str, Any], Any]:
    """A warm-up, then `count` customers measured by the meter `meter_of()` makes right
    before them: (the meter, the measured shoppers' JSON, the payment ids)."""
    warm = shoppers(web_url, tokens, WARMUP, WARMUP_RATE, timeout_s)
    if warm["failed"]:
        raise SystemExit(f"warm-up: {warm['failed']} payments not made: {warm['failures']}")
    meter = meter_of()
    shopped = shoppers(web_url, tokens, count, rate, timeout_s)
    return meter, shopped, [int(i) for i in shopped["payments"]]


def through_api(
    stack: Stack,
    sweeper: Sweeper,
    folder: Path,
    slots: int,
    latency_ms: int,
    count: int,
    rate: float,
    timeout_s: float,
) -> dict[str, Any]:
    """`count` customers at `rate` a second through the stack's API; the row of bench.settle
    with the customers' own figures (what they were answered, when they saw it final)."""
    tokens = customers(sweeper, CUSTOMERS, folder)
    meter, shopped, ids = measured(
        stack.web_url, tokens, count, rate, timeout_s, lambda: Meter(stack)
    )
    waited = time.monotonic()
    while counted(FOLLOW_UPS, ids):  # what follows a charge: its webhook, its email
        if time.monotonic() - waited > timeout_s:
            raise SystemExit("through the API: webhooks or emails left")
        meter.sample()
        time.sleep(0.2)
    meter.stop(generator_cpu_s=shopped["cpu_s"])
    return row_of(meter, "api", slots, latency_ms, shopped, ids)


def row_of(
    meter: Any, shape: str, slots: int, latency_ms: int, shopped: dict[str, Any], ids: list[int]
) -> dict[str, Any]:
    """The meter's row, its rate and latencies counted from each customer's request."""
    asked = {int(i): p["asked_at"] for i, p in shopped["payments"].items()}
    finals = final_at(ids)
    if len(finals) < len(ids) or not ids:
        raise SystemExit(f"through the API: {len(ids) - len(finals)} payments not final")
    seconds = max(finals.values()) - min(asked.values())
    latencies = [finals[i] - asked[i] for i in ids]
    seen = [p["seen_final_at"] - p["asked_at"] for p in shopped["payments"].values()]
    row = meter.row(shape, slots, latency_ms, ids, seconds, latencies)
    row["customers_failed"] = shopped["failed"]
    row["answers"] = shopped["codes"]
    row["seen_final_p50_s"] = round(sorted(seen)[len(seen) // 2], 2)
    return row
