"""Smoke version of the outage drill: small and short, asserting invariants, not timings."""

from __future__ import annotations

import pytest

from bench.drills import outage


@pytest.mark.postgres
def test_outage_drill_smoke(app: object) -> None:
    results = outage.run(
        viewers=2,
        pay_rate=2.0,
        phase_s=2,
        hang_s=2,
        naive_timeout_s=1,
        settle_s=45,
        with_shared_queue=False,  # the full drill compares the queues; this one checks
    )
    ours, naive = results["this_system"], results["naive"]
    assert ours["payments"] > 0
    assert ours["double_charges"] == 0
    assert ours["not_final_at_end"] == 0  # every payment final or needs_review
    assert ours["three_ds_authenticated"] > 0  # customers passed 3-D Secure too
    sent = sum(stats["emails"] for stats in ours["emails"].values())
    assert sent > 0 and all(stats["unsent"] == 0 for stats in ours["emails"].values())
    assert all(stats["error_rate"] == 0 for stats in ours["pages"].values())
    # The naive integration shows the incident: a blind retry after a timeout charges twice.
    assert naive["double_charges"] > 0
