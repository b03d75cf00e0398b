"""The shared breaker next to pybreaker (Redis storage) and next to no breaker.

    python -m bench.breaker

1. overhead: microseconds and Redis commands per guarded call on the happy path;
2. containment: requests reaching a hung provider before the circuit opens, with
   1, 4 and 8 worker processes, next to a per-process breaker;
3. half-open herd: probes admitted when 8 processes arrive after the open period.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
from typing import Any

import requests
from redis import Redis

from config import breaker_settings
from resilience.breaker import BreakerConfig, CircuitBreaker, Verdict

THRESHOLD = 3
CALLS = 3000


class CountingRedis(Redis):
    """Counts client round trips (each command or script call is one)."""

    round_trips = 0

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        CountingRedis.round_trips += 1
        return super().execute_command(*args, **kwargs)


def overhead(url: str) -> dict[str, Any]:
    import pybreaker

    redis = CountingRedis.from_url(url)
    ours = CircuitBreaker(redis, "bench-overhead", BreakerConfig(**breaker_settings()))
    storage = pybreaker.CircuitRedisStorage(
        pybreaker.STATE_CLOSED, CountingRedis.from_url(url), namespace="bench-pybreaker"
    )
    theirs = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=15, state_storage=storage)

    def work() -> int:
        return 1

    def guarded_ours() -> None:
        decision = ours.allow()
        work()
        ours.record(
            is_failure=False,
            duration_s=0.0,
            token=decision.token,
            needs_record=decision.needs_record,
        )

    results = {}
    for name, call in (
        ("none", work),
        ("this breaker", guarded_ours),
        ("pybreaker (Redis storage)", lambda: theirs.call(work)),
    ):
        before = CountingRedis.round_trips
        started = time.perf_counter()
        for _ in range(CALLS):
            call()
        elapsed = time.perf_counter() - started
        trips = (CountingRedis.round_trips - before) / CALLS
        results[name] = {
            "us_per_call": round(elapsed / CALLS * 1e6, 1),
            "redis_round_trips_per_call": round(trips, 2),
        }
    return results


def _hung_worker(url: str, sandbox: str, shared: bool, seconds: float, ready: Any) -> None:
    redis = Redis.from_url(url)
    breaker = CircuitBreaker(
        redis,
        "bench-outage",
        BreakerConfig(**breaker_settings(failure_threshold=THRESHOLD, min_calls=10**6, open_s=60)),
    )
    local_failures = 0
    ready.wait()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if shared:
            decision = breaker.allow()
            if decision.verdict == Verdict.REJECT:
                time.sleep(0.05)
                continue
        elif local_failures >= THRESHOLD:
            time.sleep(0.05)
            continue
        with contextlib.suppress(requests.RequestException):
            requests.post(
                f"{sandbox}/v1/payment_intents",
                timeout=(0.5, 0.5),
                headers={"Authorization": "Bearer sk_test_sandbox"},
                data={
                    "amount": "100",
                    "currency": "eur",
                    "confirm": "true",
                    "automatic_payment_methods[enabled]": "true",
                    "automatic_payment_methods[allow_redirects]": "never",
                    "payment_method": "pm_card_visa",
                },
            )
        if shared:
            breaker.record(is_failure=True, duration_s=0.5, token=decision.token)
        else:
            local_failures += 1


def containment(url: str, sandbox: str) -> list[dict[str, Any]]:
    rows = []
    ctx = mp.get_context("spawn")
    for workers in (1, 4, 8):
        row: dict[str, Any] = {"workers": workers}
        for shared in (True, False):
            Redis.from_url(url).flushdb()
            requests.post(f"{sandbox}/_sandbox/reset", timeout=5)
            requests.post(
                f"{sandbox}/_sandbox/faults", json={"kind": "hang", "seconds": 3}, timeout=5
            )
            ready = ctx.Barrier(workers)
            procs = [
                ctx.Process(target=_hung_worker, args=(url, sandbox, shared, 4.0, ready))
                for _ in range(workers)
            ]
            for proc in procs:
                proc.start()
            for proc in procs:
                proc.join()
            count = requests.get(f"{sandbox}/_sandbox/requests", timeout=5).json()["count"]
            row["this breaker" if shared else "per-process breaker"] = count
        row["bound"] = THRESHOLD + workers - 1
        rows.append(row)
    return rows


def _herd_member(url: str, which: str, ready: Any, out: Any) -> None:
    import pybreaker

    redis = Redis.from_url(url)
    ready.wait()
    if which == "ours":
        breaker = CircuitBreaker(redis, "bench-herd", BreakerConfig(**breaker_settings(open_s=0.5)))
        decision = breaker.allow()
        if decision.is_allowed:
            time.sleep(0.2)  # the provider call
            breaker.record(
                is_failure=False,
                duration_s=0.2,
                token=decision.token,
                needs_record=decision.needs_record,
            )
        out.put(int(decision.is_allowed))
        return
    storage = pybreaker.CircuitRedisStorage(
        pybreaker.STATE_OPEN, Redis.from_url(url), namespace="bench-herd-pybreaker"
    )
    theirs = pybreaker.CircuitBreaker(fail_max=THRESHOLD, reset_timeout=0.5, state_storage=storage)
    calls = []

    def call() -> None:
        calls.append(1)
        time.sleep(0.2)

    with contextlib.suppress(pybreaker.CircuitBreakerError):
        theirs.call(call)
    out.put(len(calls))


def herd(url: str) -> dict[str, int]:
    import pybreaker

    ctx = mp.get_context("spawn")
    results = {}
    for which in ("ours", "pybreaker"):
        redis = Redis.from_url(url)
        redis.flushdb()
        if which == "ours":
            breaker = CircuitBreaker(
                redis,
                "bench-herd",
                BreakerConfig(**breaker_settings(failure_threshold=1, open_s=0.5)),
            )
            breaker.record(is_failure=True, duration_s=0.0)  # open
        else:
            storage = pybreaker.CircuitRedisStorage(
                pybreaker.STATE_OPEN, Redis.from_url(url), namespace="bench-herd-pybreaker"
            )
            storage.opened_at = __import__("datetime").datetime.now(__import__("datetime").UTC)
        time.sleep(0.6)  # the open period is over: the next callers find it half-open
        ready, out = ctx.Barrier(8), ctx.Queue()
        procs = [ctx.Process(target=_herd_member, args=(url, which, ready, out)) for _ in range(8)]
        for proc in procs:
            proc.start()
        admitted = sum(out.get(timeout=60) for _ in procs)
        for proc in procs:
            proc.join()
        results["this breaker" if which == "ours" else "pybreaker (Redis storage)"] = admitted
    return results


def main() -> None:
    from bench.common import redis_url, sandbox_url, write_results

    with redis_url() as url, sandbox_url() as sandbox:
        over = overhead(url)
        print("overhead per guarded call (happy path):")
        for name, row in over.items():
            print(
                f"  {name:28} {row['us_per_call']:8.1f} us  "
                f"{row['redis_round_trips_per_call']:5.2f} Redis round trips"
            )
        contained = containment(url, sandbox)
        print(f"requests reaching a hung provider (threshold {THRESHOLD}):")
        for row in contained:
            print(
                f"  workers={row['workers']}  this breaker {row['this breaker']:3d}  "
                f"per-process {row['per-process breaker']:3d}  bound {row['bound']}"
            )
        herds = herd(url)
        print("probes admitted when 8 processes arrive after the open period:")
        for name, admitted in herds.items():
            print(f"  {name:28} {admitted}")
    path = write_results(
        "breaker", {"overhead": over, "containment": contained, "half_open_herd": herds}
    )
    print(f"results in {path}")


if __name__ == "__main__":
    main()
