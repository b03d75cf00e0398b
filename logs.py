"""Logs as JSON lines, carrying payment id, idempotency key and provider where they apply."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

# Fields a log call may pass in `extra=` that operators search by.
CONTEXT_FIELDS = ("payment_id", "subject", "idempotency_key", "provider", "event_id", "job_id")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for field in CONTEXT_FIELDS:
            value = record.__dict__.get(field)
            if value is not None:
                line[field] = str(value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line)


def configure(level: int = logging.INFO) -> None:
    """JSON lines on stderr for the whole process (idempotent)."""
    root = logging.getLogger()
    if any(isinstance(h.formatter, JsonFormatter) for h in root.handlers):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root.addHandler(handler)
    root.setLevel(level)
