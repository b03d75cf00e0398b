"""The drills' pictures: sampling that survives a failing probe, page percentiles per
bucket, and a report with one SVG per chart and system."""

from __future__ import annotations

import time
from pathlib import Path

from bench.drills import report
from bench.drills.traffic import Observations


def test_a_failing_probe_leaves_a_gap_not_a_dead_recorder() -> None:
    calls = {"n": 0}

    def flaky() -> dict[str, float]:
        calls["n"] += 1
        if calls["n"] == 2:
            raise ConnectionError("Redis is restarting")
        return {"depth": calls["n"], **({"pending": 1} if calls["n"] == 1 else {})}

    recorder = report.Recorder({"queues": flaky}, every_s=0.05).start()
    recorder.mark("fault")
    deadline = time.monotonic() + 10
    while calls["n"] < 4:  # a poll with a deadline: four samples taken
        assert time.monotonic() < deadline, "the recorder stopped sampling"
        time.sleep(0.02)
    recorder.stop()
    depths = [v for _, v in recorder.series["queues"]["depth"]]
    assert depths[:3] == [1.0, 3.0, 4.0]  # the second sample failed and is missing
    pending = [v for _, v in recorder.series["queues"]["pending"]]
    assert pending[:3] == [1.0, 0.0, 0.0]  # a count no longer reported is zero, not a gap
    assert [label for _, label in recorder.marks] == ["fault"]


def test_page_percentiles_and_errors_per_bucket() -> None:
    obs = Observations()
    start = 100.0
    for i in range(100):
        obs.page(True, float(i + 1), "baseline", at=start + 0.5)  # bucket 0: 1..100 ms
    obs.page(True, 7.0, "outage", at=start + report.BUCKET_S + 0.1)  # bucket 1
    obs.page(False, 10_000.0, "outage", at=start + report.BUCKET_S + 0.2)
    series = report.page_series(obs, start)
    assert series["p50"] == [(0.0, 51.0), (report.BUCKET_S, 7.0)]
    assert series["p99"][0] == (0.0, 100.0)
    assert series["errors"] == [(0.0, 0.0), (report.BUCKET_S, 1.0)]


def test_the_report_puts_the_systems_side_by_side(tmp_path: Path) -> None:
    ours = {
        "series": {"breakers": {"stripe": [(0.0, 0.0), (5.0, 2.0)]}, "pages": {}},
        "marks": [(2.0, "outage")],
    }
    naive = {"series": {"pages": {"p99": [(0.0, 10.0), (4.0, 5000.0)]}}, "marks": []}
    page = report.write_report(
        tmp_path, "drill", "A <drill>", {"This system": ours, "Naive": naive}, {"breakers": "none"}
    ).read_text()
    assert "A &lt;drill&gt;" in page and page.count("<svg") == 4  # 2 charts x 2 systems
    breaker = (tmp_path / "drill-breakers-this_system.svg").read_text()
    assert "<polyline" in breaker and ">outage<" in breaker and ">5 s<" in breaker
    assert ">none<" in (tmp_path / "drill-breakers-naive.svg").read_text()
    assert "<polyline" in (tmp_path / "drill-pages-naive.svg").read_text()
    published = report.publish(tmp_path, "drill", tmp_path / "docs")
    assert sorted(p.name for p in published) == sorted(p.name for p in tmp_path.glob("*.svg"))
