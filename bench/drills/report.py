"""The drills' pictures: a Recorder samples, once a second while a drill runs, what an
operator would watch (breakers, queue depths, payments by state, double charges at the
provider); the report draws those series and the page latency over time as SVG (the
dashboard's own chart code, services/backoffice/charts.py) into one HTML page per drill under
bench/results/, the systems side by side. `publish` copies the images into docs/.

    bench/results/outage-postgres.html, outage-postgres-<chart>-<system>.svg
"""

from __future__ import annotations

import contextlib
import html
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests

from bench.drills.traffic import Observations, _percentile, busy_web_threads

Series = dict[str, list[tuple[float, float]]]
Probe = Callable[[], dict[str, float]]
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images" / "drills"
BUCKET_S = 2.0  # page latency percentiles per bucket of this many seconds

# (chart key, title): the rows of the report, in order.
CHARTS = (
    ("pages", "Page latency, ms"),
    ("page_errors", "Failed page views per 2 s"),
    ("payments", "Payments by state"),
    ("double_charges", "Payments charged twice at the provider"),
    ("breakers", "Breaker state (0 closed, 1 half-open, 2 open)"),
    ("queues", "Queue depth"),
    ("web_busy", "Busy web threads"),
)


class Recorder:
    """Calls each probe once a second (a probe that fails, because the database or Redis is
    down, leaves a gap) and keeps the series with the time since the recorder started."""

    def __init__(self, probes: dict[str, Probe], every_s: float = 1.0) -> None:
        self.probes, self.every_s = probes, every_s
        self.started = time.monotonic()
        self.series: dict[str, Series] = {name: {} for name in probes}
        self.marks: list[tuple[float, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def now(self) -> float:
        return time.monotonic() - self.started

    def mark(self, label: str) -> None:
        self.marks.append((round(self.now(), 1), label))

    def start(self) -> Recorder:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            at = round(self.now(), 1)
            for name, probe in self.probes.items():
                try:
                    values = probe()
                except Exception:
                    continue
                for label in self.series[name].keys() - values.keys():
                    values[label] = 0.0  # no row for it any more: a count of none
                for label, value in values.items():
                    self.series[name].setdefault(label, []).append((at, float(value)))


def app_probes(app: Any) -> dict[str, Probe]:
    """This system, as its dashboard sees it: breakers, queues and payments by state."""
    from extensions import db
    from services.backoffice import charts, dashboard

    def read(what: Callable[[], dict[str, float]]) -> Probe:
        def probe() -> dict[str, float]:
            with app.app_context():
                try:
                    return what()
                finally:
                    db.session.remove()

        return probe

    return {
        "breakers": read(
            lambda: {
                b["provider"]: charts.STATE_LEVEL.get(b["state"], 0)
                for b in dashboard.breakers()
                if "error" not in b
            }
        ),
        "queues": read(lambda: {q["name"]: q["depth"] for q in dashboard.queues() if "depth" in q}),
        "payments": read(lambda: dict(_payment_counts_by_status())),
    }


def watch(app: Any, sandbox_url: str, web_url: str) -> Recorder:
    """A started recorder of this system: what its dashboard shows, the provider's double
    charges and the busy web threads."""
    return Recorder(
        {
            **app_probes(app),
            "double_charges": sandbox_probe(sandbox_url),
            "web_busy": busy_probe(web_url),
        }
    ).start()


def timeline(recorder: Recorder, obs: Observations) -> dict[str, Any]:
    """A drill's pictures' data: the sampled series, the page latency, the marks."""
    pages = page_series(obs, recorder.started)
    errors = {"failed": pages.pop("errors")}
    return {
        "series": {**recorder.series, "pages": pages, "page_errors": errors},
        "marks": recorder.marks,
    }


def sandbox_probe(sandbox_url: str) -> Probe:
    """Payments the provider's own ledger shows charged more than once."""
    session = requests.Session()

    def probe() -> dict[str, float]:
        charges = session.get(f"{sandbox_url}/_sandbox/charges", timeout=5).json()
        return {"charged twice": len(charges["double_charged_payments"])}

    return probe


def busy_probe(web_url: str) -> Probe:
    """Web threads serving a request."""
    session = requests.Session()
    return lambda: {"busy": busy_web_threads(session, web_url)}


def page_series(obs: Observations, started: float) -> Series:
    """p50 and p99 of the page views started in each bucket, and the failed views."""
    buckets: dict[int, list[float]] = {}
    errors: dict[int, int] = {}
    with obs.lock:
        log = list(obs.page_log)
    for at, ms in log:
        bucket = int((at - started) // BUCKET_S)
        buckets.setdefault(bucket, [])
        if ms is None:
            errors[bucket] = errors.get(bucket, 0) + 1
        else:
            buckets[bucket].append(ms)
    series: Series = {"p50": [], "p99": [], "errors": []}
    for bucket in sorted(buckets):
        t = bucket * BUCKET_S
        for name, share in (("p50", 0.5), ("p99", 0.99)):
            value = _percentile(buckets[bucket], share)
            if value is not None:
                series[name].append((t, value))
        series["errors"].append((t, float(errors.get(bucket, 0))))
    return series


def write_report(
    results_dir: Path,
    name: str,
    title: str,
    systems: dict[str, dict[str, Any]],
    notes: dict[str, str] | None = None,
) -> Path:
    """One HTML page (the charts inline, so it opens alone) and one SVG per chart and
    system. `systems`: label -> {"series": {chart: Series}, "marks": [(t, label)]}.
    `notes`: chart -> what an empty chart means (the naive system has no breaker)."""
    from services.backoffice.charts import svg

    results_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for chart, chart_title in CHARTS:
        if not any(chart in system["series"] for system in systems.values()):
            continue
        cells = []
        for label, system in systems.items():
            picture = svg(
                f"{chart_title}: {label}",
                system["series"].get(chart, {}),
                x_labels=("0 s", f"{_end(system):.0f} s"),
                marks=system.get("marks", []),
                empty=(notes or {}).get(chart, "nothing sampled"),
                steps=chart == "breakers",
                x_range=(0.0, _end(system)),
            )
            slug = label.lower().replace(" ", "_")
            (results_dir / f"{name}-{chart}-{slug}.svg").write_text(str(picture))
            cells.append(f"<td>{picture}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    heads = "".join(f"<th>{html.escape(label)}</th>" for label in systems)
    page = (
        f"<!doctype html><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<style>body{font-family:sans-serif}td{vertical-align:top}</style>"
        f"<h1>{html.escape(title)}</h1><table><tr>{heads}</tr>{''.join(rows)}</table>"
    )
    path = results_dir / f"{name}.html"
    path.write_text(page)
    return path


def _end(system: dict[str, Any]) -> float:
    times = [t for series in system["series"].values() for v in series.values() for t, _ in v]
    return max(times, default=0.0)


def publish(results_dir: Path, name: str, target: Path = DOCS_IMAGES) -> list[Path]:
    """Copy a report's SVGs into docs/images/drills (the images docs/ embeds)."""
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for image in sorted(results_dir.glob(f"{name}-*.svg")):
        with contextlib.suppress(shutil.SameFileError):
            copied.append(Path(shutil.copy(image, target / image.name)))
    return copied


def _payment_counts_by_status() -> dict[str, int]:
    """Every payment status's count (a drill's small tables: a scan is fine here)."""
    from sqlalchemy import func, select

    from extensions import db
    from models import Payment

    return {
        status.value: count
        for status, count in db.session.execute(
            select(Payment.status, func.count()).group_by(Payment.status)
        ).all()
    }
