"""Every object the sandbox returns has Stripe's field set and types, compared with
Stripe's published fixtures (tests/fixtures/stripe_objects.json). Only the named,
documented omissions below are allowed (docs/sandbox.md lists them too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
import stripe

from tests.sandbox_support import wait_for

FIXTURES = json.loads((Path(__file__).parents[2] / "fixtures" / "stripe_objects.json").read_text())
# Fields of Stripe's objects the sandbox leaves out, and why. Empty today: keep it so.
ALLOWED_OMISSIONS: dict[str, set[str]] = {
    "payment_intent": set(),
    "event": set(),
    "dispute": set(),
    "balance_transaction": set(),
    "payout": set(),
}
LIST_FIELDS = {"object", "url", "has_more", "data"}
SEARCH_FIELDS = {"object", "url", "has_more", "next_page", "data"}
# What Stripe's SDK knows of an error object: the sandbox must not invent others.
ERROR_FIELDS = {name for name in stripe.ErrorObject.__annotations__ if not name.startswith("_")}
AUTH = {"Authorization": "Bearer sk_test_sandbox"}
CARD = {
    "automatic_payment_methods[enabled]": "true",
    "automatic_payment_methods[allow_redirects]": "never",
}


def _post(sandbox: Any, path: str, **form: str) -> requests.Response:
    return requests.post(f"{sandbox.url}{path}", data=form, headers=AUTH, timeout=10)


def _kind(value: Any) -> str:
    return type(value).__name__


def _differences(ours: dict[str, Any], reference: dict[str, Any], kind: str) -> list[str]:
    problems = []
    missing = set(reference) - set(ours) - ALLOWED_OMISSIONS[kind]
    extra = set(ours) - set(reference)
    if missing:
        problems.append(f"{kind} lacks {sorted(missing)}")
    if extra:
        problems.append(f"{kind} has fields Stripe's does not: {sorted(extra)}")
    for name in set(ours) & set(reference):
        mine, theirs = ours[name], reference[name]
        if mine is not None and theirs is not None and _kind(mine) != _kind(theirs):
            problems.append(f"{kind}.{name} is {_kind(mine)}, Stripe's is {_kind(theirs)}")
    return problems


def _intents_in_every_state(sandbox: Any) -> dict[str, dict[str, Any]]:
    create = "/v1/payment_intents"
    base = {"amount": "1000", "currency": "eur", **CARD}
    states = {
        "requires_payment_method": _post(sandbox, create, **base).json(),
        "requires_confirmation": _post(sandbox, create, **base, payment_method="pm_card_visa"),
        "succeeded": _post(sandbox, create, **base, confirm="true", payment_method="pm_card_visa"),
        "declined": _post(
            sandbox, create, **base, confirm="true", payment_method="pm_card_chargeDeclined"
        ).json()["error"]["payment_intent"],
        "requires_action": _post(
            sandbox,
            create,
            **base,
            confirm="true",
            payment_method="pm_card_authenticationRequired",
        ),
        "requires_capture": _post(
            sandbox,
            create,
            **base,
            confirm="true",
            payment_method="pm_card_visa",
            capture_method="manual",
        ),
    }
    states = {k: v.json() if isinstance(v, requests.Response) else v for k, v in states.items()}
    canceled = _post(sandbox, f"{create}/{states['requires_payment_method']['id']}/cancel")
    states["canceled"] = canceled.json()
    return states


def test_payment_intents_have_stripes_fields_and_types_in_every_state(sandbox: Any) -> None:
    problems = []
    for state, intent in _intents_in_every_state(sandbox).items():
        problems += [
            f"{state}: {p}"
            for p in _differences(intent, FIXTURES["payment_intent"], "payment_intent")
        ]
    assert problems == []


def test_events_lists_and_search_results_have_stripes_shapes(
    sandbox: Any, webhook_receiver: Any
) -> None:
    _post(
        sandbox,
        "/v1/payment_intents",
        amount="700",
        currency="eur",
        confirm="true",
        payment_method="pm_card_visa",
        **{"metadata[payment_id]": "3"},
        **CARD,
    )
    wait_for(lambda: webhook_receiver.deliveries)
    delivered = json.loads(webhook_receiver.deliveries[0].body)
    listed = requests.get(f"{sandbox.url}/v1/events", headers=AUTH, timeout=5).json()
    searched = requests.get(
        f"{sandbox.url}/v1/payment_intents/search",
        params={"query": "metadata['payment_id']:'3'"},
        headers=AUTH,
        timeout=5,
    ).json()
    assert set(listed) == LIST_FIELDS and listed["object"] == "list"
    assert set(searched) == SEARCH_FIELDS and searched["object"] == "search_result"
    problems = _differences(delivered, FIXTURES["event"], "event")
    problems += _differences(listed["data"][0], FIXTURES["event"], "event")
    problems += _differences(
        delivered["data"]["object"], FIXTURES["payment_intent"], "payment_intent"
    )
    assert problems == []
    assert delivered["request"]["id"].startswith("req_")


@pytest.mark.parametrize(
    ("form", "status"),
    [
        ({"payment_method": "pm_card_chargeDeclined", "confirm": "true"}, 402),
        ({"bogus": "1"}, 400),
        ({"payment_method": "pm_nope", "confirm": "true"}, 400),
    ],
)
def test_errors_have_only_stripes_fields(sandbox: Any, form: dict[str, str], status: int) -> None:
    answer = _post(sandbox, "/v1/payment_intents", amount="900", currency="eur", **CARD, **form)
    assert answer.status_code == status
    error = answer.json()["error"]
    assert set(error) <= ERROR_FIELDS, set(error) - ERROR_FIELDS
    assert {"type", "message", "request_log_url"} <= set(error)
    if status == 402:
        assert {"code", "decline_code", "doc_url", "charge", "payment_intent"} <= set(error)


def test_disputes_have_stripes_fields_and_types(sandbox: Any) -> None:
    intent = _post(
        sandbox,
        "/v1/payment_intents",
        amount="1000",
        currency="eur",
        confirm="true",
        payment_method="pm_card_createDispute",
        **CARD,
    ).json()
    listed = requests.get(
        f"{sandbox.url}/v1/disputes",
        params={"payment_intent": intent["id"]},
        headers=AUTH,
        timeout=10,
    ).json()
    [dispute] = listed["data"]
    assert _differences(dispute, FIXTURES["dispute"], "dispute") == []
    assert set(dispute["evidence"]) == set(FIXTURES["dispute"]["evidence"])
    assert set(dispute["evidence_details"]) == set(FIXTURES["dispute"]["evidence_details"])


def test_balance_transactions_and_payouts_have_stripes_fields_and_types(sandbox: Any) -> None:
    intent = _post(
        sandbox,
        "/v1/payment_intents",
        amount="1000",
        currency="eur",
        confirm="true",
        payment_method="pm_card_visa",
        **CARD,
    ).json()
    _post(sandbox, "/v1/refunds", payment_intent=intent["id"], amount="100")
    sandbox.age_balance(2 * 86400)
    sandbox.pay_out()
    listed = requests.get(
        f"{sandbox.url}/v1/balance_transactions", headers=AUTH, timeout=10
    ).json()["data"]
    assert sorted(t["type"] for t in listed) == ["charge", "payout", "refund"]
    problems = [
        p
        for txn in listed
        for p in _differences(txn, FIXTURES["balance_transaction"], "balance_transaction")
    ]
    [payout] = requests.get(f"{sandbox.url}/v1/payouts", headers=AUTH, timeout=10).json()["data"]
    problems += _differences(payout, FIXTURES["payout"], "payout")
    assert problems == []
