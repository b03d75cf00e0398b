"""Smoke version of the outage drill: small and short, asserting invariants, not timings."""

from __future__ import annotations

from pathlib import Path

from bench.drills import outage, report
from bench.drills.traffic import PHASES


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
    assert ours["charged_by_provider"].get("braintree", 0) > 0  # both providers, same faults
    assert ours["charged_by_provider"].get("stripe", 0) > 0
    assert ours["not_final_at_end"] == 0  # every payment final or needs_review
    assert ours["three_ds_authenticated"] > 0  # customers passed 3-D Secure too
    sent = sum(stats["emails"] for stats in ours["emails"].values())
    assert sent > 0 and all(stats["unsent"] == 0 for stats in ours["emails"].values())
    assert all(stats["error_rate"] == 0 for stats in ours["pages"].values())
    # The naive integration shows the incident: a blind retry after a timeout charges twice.
    assert naive["double_charges"] > 0
    # The pictures: what the dashboard saw over time, both systems side by side.
    series = ours["timeline"]["series"]
    assert series["breakers"]["stripe"] and series["queues"]
    assert max(v for _, v in series["payments"]["succeeded"]) > 0
    assert [label for _, label in ours["timeline"]["marks"]][:4] == list(PHASES)
    assert max(v for _, v in naive["timeline"]["series"]["double_charges"]["charged twice"]) > 0
    page = Path(results["report"]).read_text()
    assert page.count("<svg") == 2 * len(report.CHARTS)
    assert "no breaker" in page  # the naive side, said rather than drawn blank
    name = Path(results["report"]).stem
    assert (Path(results["report"]).parent / f"{name}-pages-naive.svg").exists()
