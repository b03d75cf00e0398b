"""Fault definitions are validated; tamper changes the payment object(s) of an answer."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

import pytest
import requests

from sandbox.faults import tamper
from tests.sandbox_support import PROJECT_DIR, create


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
        ({"kind": "boom"}, "kind must be"),
        ({"kind": "latency", "rate": 2}, "rate"),
        ({"kind": "error", "status": 418}, "status"),
        ({"kind": "hang", "count": 0}, "count"),
        ({"kind": "hang", "dialect": "paypal"}, "dialect"),
        ({"kind": "error", "phase": "during"}, "phase"),
        ({"kind": "error", "status": 502, "phase": "stored"}, "stored"),
        ({"kind": "search_lag", "seconds": -1}, "seconds"),
        ({"kind": "search_lag", "seconds": "long"}, "seconds"),
        ({"kind": "commit_timeout", "until_deleted": "yes"}, "until_deleted"),
    ],
)
def test_bad_fault_specs_are_refused(sandbox: Any, spec: dict[str, Any], message: str) -> None:
    response = requests.post(f"{sandbox.url}/_sandbox/faults", json=spec, timeout=5)
    assert response.status_code == 400 and message in response.json()["error"]


def test_latency_fault_slows_answers(sandbox: Any) -> None:
    sandbox.add_fault("latency", ms=400, dialect="stripe")
    started = time.monotonic()
    create(sandbox, "key-12")
    assert time.monotonic() - started >= 0.4


def test_faults_cli_and_help(sandbox: Any) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "sandbox", *args],
            cwd=PROJECT_DIR,
            capture_output=True,
            text=True,
            timeout=30,
        )

    assert "commit_timeout" in cli("--help").stdout
    added = cli(
        "faults", "--url", sandbox.url, "add", "error", "status=503", "rate=0.5", "dialect=stripe"
    )
    assert added.returncode == 0, added.stderr
    listed = cli("faults", "--url", sandbox.url, "list")
    assert '"status": 503' in listed.stdout and '"rate": 0.5' in listed.stdout
    assert cli("faults", "--url", sandbox.url, "add", "error", "status=418").returncode == 1
    cli("faults", "--url", sandbox.url, "clear")
    assert requests.get(f"{sandbox.url}/_sandbox/faults", timeout=5).json()["data"] == []


def test_an_answer_held_until_deleted_goes_when_its_fault_is_deleted(sandbox: Any) -> None:
    held = sandbox.add_fault("commit_timeout", hold_s=20, until_deleted=True, dialect="stripe")
    answers: list[int] = []
    asking = threading.Thread(target=lambda: answers.append(create(sandbox).status_code))
    asking.start()
    sandbox.wait_for_request("create")  # processed and committed; the answer is held
    time.sleep(0.5)
    assert asking.is_alive() and answers == []
    released_at = time.monotonic()
    requests.delete(f"{sandbox.url}/_sandbox/faults/{held}", timeout=5).raise_for_status()
    asking.join(5)
    assert answers == [200] and time.monotonic() - released_at < 2
