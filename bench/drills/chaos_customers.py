"""The chaos drill's customers: well-behaved API clients and what they saw."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import requests

from bench.drills.traffic import THREE_DS_CARD, Authenticator, card_for

# Every DISPUTE_EVERY-th card payment (the first included) is made with one of Stripe's
# dispute test cards: a chargeback or an inquiry, opened as the charge succeeds.
DISPUTE_EVERY = 6
DISPUTE_CARDS = ("pm_card_createDispute", "pm_card_createDisputeInquiry")


class Disputer:
    """The shop's operator answering disputes in Stripe's Dashboard while faults come and
    go: evidence that wins every other one, loses the rest (the sandbox decides as
    Stripe's test mode does). A request a fault broke is tried again on a later tick."""

    def __init__(self, sandbox_url: str, every_s: float = 2.0) -> None:
        self.url, self.every_s, self.last = sandbox_url, every_s, 0.0
        self.session = requests.Session()
        self.session.headers["Authorization"] = "Bearer sk_test_sandbox"
        self.decided: dict[str, str] = {}

    def tick(self) -> None:
        if time.monotonic() - self.last < self.every_s:
            return
        self.last = time.monotonic()
        try:
            listed = self.session.get(f"{self.url}/v1/disputes?limit=100", timeout=5).json()
            for dispute in listed.get("data", []):
                if dispute["id"] in self.decided or dispute["status"] not in OPEN_AT_STRIPE:
                    continue
                evidence = "winning_evidence" if len(self.decided) % 2 == 0 else "losing_evidence"
                answer = self.session.post(
                    f"{self.url}/v1/disputes/{dispute['id']}",
                    data={"evidence[uncategorized_text]": evidence},
                    timeout=5,
                )
                if answer.status_code == 200:
                    self.decided[dispute["id"]] = evidence
        except (requests.RequestException, ValueError, KeyError):
            return  # a fault in the way: next tick


OPEN_AT_STRIPE = ("needs_response", "warning_needs_response")


@dataclass
class Traffic:
    """What the customers did and what they saw."""

    payment_ids: set[int] = field(default_factory=set)
    statuses: Counter[int] = field(default_factory=Counter)
    gave_up: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def saw(self, status: int) -> None:
        with self.lock:
            self.statuses[status] += 1


class Customer:
    """A well-behaved API client: retries transport errors and 5xx with the same key."""

    def __init__(
        self,
        web_url: str,
        token: str,
        rng: random.Random,
        traffic: Traffic,
        bank: Authenticator,
    ) -> None:
        self.web_url, self.rng, self.traffic, self.bank = web_url, rng, traffic, bank
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.card_payments = 0

    def call(self, method: str, path: str, key: str | None = None, **kw: Any) -> Any:
        headers = {"Idempotency-Key": key} if key else {}
        for _ in range(8):
            try:
                response = self.session.request(
                    method, self.web_url + path, headers=headers, timeout=10, **kw
                )
            except requests.RequestException:
                time.sleep(0.5)
                continue
            self.traffic.saw(response.status_code)
            if response.status_code < 500:
                return response.json()
            time.sleep(0.5)
        with self.traffic.lock:
            self.traffic.gave_up += 1
        return None

    def order(self) -> dict[str, Any] | None:
        items = [{"sku": "MUG-001", "quantity": self.rng.randint(1, 3)}]
        # Orders carry no key: a retried order is a second open order, which costs nothing.
        return self.call("POST", "/api/orders", json={"items": items})

    def one(self, operation: str) -> None:
        if operation == "topup":
            body = {
                "amount_minor": self.rng.choice((500, 2000, 5000)),
                "currency": "EUR",
                "payment_method": self._card(),
            }
            self._payment(self.call("POST", "/api/wallet/topups", str(uuid.uuid4()), json=body))
            return
        if operation == "debit":
            body = {"amount_minor": self.rng.choice((100, 700)), "currency": "EUR"}
            self.call("POST", "/api/wallet/debits", str(uuid.uuid4()), json=body)
            return
        order = self.order()
        if not order or "id" not in order:
            return
        if operation == "card":
            path = f"/api/orders/{order['id']}/payments"
            card = {"payment_method": self._card()}
            self._payment(self.call("POST", path, str(uuid.uuid4()), json=card))
        else:
            self.call("POST", f"/api/orders/{order['id']}/wallet-payments", str(uuid.uuid4()))

    def _card(self) -> str:
        self.card_payments += 1
        if self.card_payments % DISPUTE_EVERY == 1:  # charged, then disputed by the bank
            return DISPUTE_CARDS[(self.card_payments // DISPUTE_EVERY) % len(DISPUTE_CARDS)]
        return card_for(self.bank, self.card_payments)  # odd: Braintree's

    def _payment(self, body: Any) -> None:
        if isinstance(body, dict) and isinstance(body.get("id"), int):
            with self.traffic.lock:
                self.traffic.payment_ids.add(body["id"])
            if body.get("payment_method") == THREE_DS_CARD:
                self.bank.watch(body["id"], dict(self.session.headers))  # type: ignore[arg-type]  # requests' headers are a CaseInsensitiveDict


def shop(shopper: Customer, plan: list[str], duration_s: float) -> None:
    """Spread the plan over the drill, so every fault meets traffic."""
    started = time.monotonic()
    for index, operation in enumerate(plan):
        shopper.one(operation)
        due = started + duration_s * (index + 1) / len(plan)
        time.sleep(max(0.0, due - time.monotonic()))
