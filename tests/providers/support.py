"""What the provider clients' tests share: a fast HTTP policy (short timeouts and
backoff, so fault scenarios finish in seconds)."""

from __future__ import annotations

from providers.http import HttpPolicy

POLICY = HttpPolicy(
    connect_timeout_s=0.5,
    read_timeout_s=1.0,
    call_budget_s=4.0,
    max_retries=2,
    retry_after_cap_s=1,
    backoff_factor_s=0.05,
    backoff_jitter_s=0.05,
)
