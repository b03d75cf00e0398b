"""Log lines are JSON, carrying the payment's identity where a call passes it."""

from __future__ import annotations

import json
import logging
import sys

from logs import JsonFormatter


def test_a_line_is_json_with_the_context_fields() -> None:
    record = logging.LogRecord(
        "services.payments.kind", logging.INFO, __file__, 1, "paid %s", (7,), None
    )
    record.__dict__.update(payment_id=7, idempotency_key="k-1", provider="stripe", other="x")
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "paid 7" and line["level"] == "INFO"
    assert (line["payment_id"], line["idempotency_key"], line["provider"]) == ("7", "k-1", "stripe")
    assert "other" not in line  # only the fields operators search by


def test_an_exception_is_kept_in_the_line() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    line = json.loads(JsonFormatter().format(record))
    assert "RuntimeError: boom" in line["exception"]
