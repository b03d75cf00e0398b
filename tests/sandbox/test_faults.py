"""Fault definitions are validated; tamper changes the payment object(s) of an answer."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from sandbox.faults import tamper


def test_tamper_changes_one_object_or_each_in_a_list() -> None:
    single = tamper({"id": "pi_1", "amount": 100}, "amount", 1)
    assert single == {"id": "pi_1", "amount": 1}
    listed = tamper(
        {"data": [{"metadata": {}}, {"metadata": {"a": "b"}}]}, "metadata.payment_id", "9"
    )
    assert [o["metadata"]["payment_id"] for o in listed["data"]] == ["9", "9"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "tamper", "field": "status"}, "field must be one of"),
        ({"kind": "error", "status": 418}, "status must be"),
        ({"kind": "latency", "rate": 2}, "rate must be"),
    ],
)
def test_bad_fault_specs_are_refused(sandbox: Any, spec: dict[str, Any], message: str) -> None:
    answer = requests.post(f"{sandbox.url}/_sandbox/faults", json=spec, timeout=5)
    assert answer.status_code == 400 and message in answer.text
