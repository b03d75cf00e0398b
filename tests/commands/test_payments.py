"""`flask payments refund`: the refund as JSON; ten operators at once refund once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from typing import Any

from flask import Flask

from models import Refund
from tests.helpers import (
    FAST_PROVIDER_CONFIG,
    charged,
    committed_payment,
    rows,
    run_jobs,
    sandbox_refunds,
)
from tests.worker_support import PROJECT_DIR


def test_the_command_prints_the_refund(app: Flask, runner: Any, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))
    key = str(uuid.uuid4())
    args = [
        "payments",
        "refund",
        str(payment_id),
        "--amount",
        "2,50",
        "--locale",
        "it",
        "--reason",
        "broken mug",
    ]
    first = runner.invoke(args=[*args, "--key", key])
    assert first.exit_code == 0, first.output
    shown = json.loads(first.output)
    assert shown["status"] == "pending" and shown["amount_minor"] == 250 and shown["is_new"]
    assert shown["amount"] == "€2.50"
    again = json.loads(runner.invoke(args=[*args, "--key", key]).output)
    assert again["id"] == shown["id"] and not again["is_new"]
    run_jobs(app)
    assert [r["amount"] for r in sandbox_refunds(sandbox)] == [250]


def test_a_refused_refund_says_why_and_exits_1(app: Flask, runner: Any, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))
    refused = runner.invoke(
        args=["payments", "refund", str(payment_id), "--amount", "50", "--reason", "typo!"]
    )
    assert refused.exit_code == 1 and "refund_exceeds_charge" in refused.output
    assert "at most €10.00 is left to refund" in refused.output
    unread = runner.invoke(
        args=["payments", "refund", str(payment_id), "--amount", "5,50", "--reason", "typo!"]
    )
    assert unread.exit_code == 2 and "did you mean €5.50?" in unread.output  # en: 5.50
    assert rows(app, Refund) == 0
    missing = runner.invoke(args=["payments", "refund", "99999", "--reason", "nobody"])
    assert missing.exit_code == 1 and "payment_not_found" in missing.output


def test_ten_operators_refunding_at_once_refund_once(app: Flask, sandbox: Any) -> None:
    payment_id = charged(app, committed_payment(app))
    env = {
        **os.environ,
        "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"],
        "REDIS_URL": app.config["REDIS_URL"],
        "STRIPE_API_BASE": sandbox.url,
        "SECRET_KEY": "test",
        **{k: str(v) for k, v in FAST_PROVIDER_CONFIG.items()},
    }
    command = [sys.executable, "-m", "flask", "--app", "app", "payments", "refund"]
    processes = [
        subprocess.Popen(
            [*command, str(payment_id), "--reason", "refund everything"],
            cwd=PROJECT_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(10)
    ]
    results = [p.communicate(timeout=60) for p in processes]
    made = [json.loads(out) for out, _ in results if out.strip()]
    refused = [err for _, err in results if "fully_refunded" in err]
    assert len(made) == 1 and len(refused) == 9
    run_jobs(app)
    assert [r["amount"] for r in sandbox_refunds(sandbox)] == [1000]


def test_an_id_beyond_any_row_is_a_usage_error_not_a_traceback(runner: Any) -> None:
    for command in ("refund", "refund-wallet-order"):
        done = runner.invoke(args=["payments", command, "99999999999", "--reason", "nobody"])
        assert done.exit_code == 2 and "Traceback" not in done.output
        assert "99999999999" in done.output and "range" in done.output
