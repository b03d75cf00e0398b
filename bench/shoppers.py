"""The shop's customers, as a process of its own (bench.settle --through-api runs it
against the system and against the straight-line baseline, and reads its CPU apart).

    python -m bench.shoppers WEB_URL --tokens FILE --payments N --rate R [--clients C]

New customers arrive at R a second (an open loop: a slow shop is measured, not hidden).
Each creates an order (POST /api/orders), pays it by card (POST
/api/orders/<id>/payments, its own Idempotency-Key), then asks for the payment
(GET /api/payments/<id>) every STATUS_REFRESH_S, as the status page asks for itself,
until it is final. C threads do the asking; each customer uses one of the API tokens
in FILE (one a line). The last line is JSON: each payment's id, when its customer
asked for the order and when it was seen final (epoch seconds), the answers' status
codes, this process's CPU while they shopped.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from blueprints.checkout import STATUS_REFRESH_S

CARD = "pm_card_visa"
ITEMS = [{"sku": "MUG-001", "quantity": 1}]


@dataclass
class Shop:
    web_url: str
    tokens: list[str]
    payments: dict[int, dict[str, Any]] = field(default_factory=dict)
    codes: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    due: list[tuple[float, int, str]] = field(default_factory=list)  # (when, payment, token)
    lock: threading.Lock = field(default_factory=threading.Lock)
    local: threading.local = field(default_factory=threading.local)

    def session(self) -> requests.Session:
        if not hasattr(self.local, "session"):
            self.local.session = requests.Session()
            self.local.session.mount("http://", HTTPAdapter(pool_maxsize=4))
        session: requests.Session = self.local.session
        return session

    def ask(self, method: str, path: str, token: str, **kw: Any) -> Any:
        headers = {"Authorization": f"Bearer {token}", **kw.pop("headers", {})}
        answer = self.session().request(
            method, self.web_url + path, headers=headers, timeout=30, **kw
        )
        with self.lock:
            self.codes[answer.status_code] += 1
        answer.raise_for_status()
        return answer.json()

    def buy(self, number: int) -> None:
        token = self.tokens[number % len(self.tokens)]
        asked_at = time.time()
        try:
            order = self.ask("POST", "/api/orders", token, json={"items": ITEMS})
            payment = self.ask(
                "POST",
                f"/api/orders/{order['id']}/payments",
                token,
                json={"payment_method": CARD},
                headers={"Idempotency-Key": str(uuid.uuid4())},
            )
        except (requests.RequestException, ValueError, KeyError) as exc:
            with self.lock:
                self.failures.append(f"{type(exc).__name__}: {exc}")
            return
        with self.lock:
            self.payments[payment["id"]] = {"asked_at": asked_at, "seen_final_at": None}
            heapq.heappush(self.due, (time.monotonic() + STATUS_REFRESH_S, payment["id"], token))

    def look(self, payment_id: int, token: str) -> None:
        try:
            payment = self.ask("GET", f"/api/payments/{payment_id}", token)
            is_final = bool(payment["is_final"])
        except (requests.RequestException, ValueError, KeyError):
            is_final = False  # asked again at the next refresh
        with self.lock:
            if is_final:
                self.payments[payment_id]["seen_final_at"] = time.time()
                self.payments[payment_id]["status"] = payment["status"]
            else:
                heapq.heappush(self.due, (time.monotonic() + STATUS_REFRESH_S, payment_id, token))

    def due_now(self) -> list[tuple[float, int, str]]:
        with self.lock:
            now, ready = time.monotonic(), []
            while self.due and self.due[0][0] <= now:
                ready.append(heapq.heappop(self.due))
            return ready

    def waiting(self) -> int:
        with self.lock:
            return sum(1 for p in self.payments.values() if p["seen_final_at"] is None)


def shop(
    web_url: str, tokens: list[str], count: int, rate: float, clients: int, timeout_s: float
) -> dict[str, Any]:
    the_shop = Shop(web_url, tokens)
    started, cpu_before = time.monotonic(), _cpu_s()
    with ThreadPoolExecutor(clients, thread_name_prefix="customer") as pool:
        arrived = 0
        while time.monotonic() - started < timeout_s:
            while arrived < count and started + arrived / rate <= time.monotonic():
                pool.submit(the_shop.buy, arrived)
                arrived += 1
            for _, payment_id, token in the_shop.due_now():
                pool.submit(the_shop.look, payment_id, token)
            bought = len(the_shop.payments) + len(the_shop.failures)
            if bought == count and not the_shop.waiting():
                break
            time.sleep(0.005)
    return {
        "payments": the_shop.payments,
        "codes": dict(the_shop.codes),
        "failures": the_shop.failures[:20],
        "failed": len(the_shop.failures),
        # The customers' own work, from their first request: not this interpreter's start
        # and imports (about 0.9 s of CPU, 3 ms a payment of a run of 300).
        "cpu_s": _cpu_s() - cpu_before,
    }


def _cpu_s() -> float:
    own = os.times()
    return own.user + own.system


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("web_url")
    parser.add_argument("--tokens", required=True, help="a file of API tokens, one a line")
    parser.add_argument("--payments", type=int, default=300)
    parser.add_argument("--rate", type=float, default=100.0, help="new customers a second")
    parser.add_argument("--clients", type=int, default=48, help="threads asking at once")
    parser.add_argument("--timeout-s", type=float, default=300)
    args = parser.parse_args()
    with open(args.tokens) as lines:
        tokens = [line.strip() for line in lines if line.strip()]
    print(
        json.dumps(
            shop(args.web_url, tokens, args.payments, args.rate, args.clients, args.timeout_s)
        )
    )


if __name__ == "__main__":
    main()
