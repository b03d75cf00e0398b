"""The outage drill's verdict (its promises, checked), its printed table and pictures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import RESULTS_DIR
from bench.drills import report
from bench.drills.traffic import PHASES


def verdict(results: dict[str, Any]) -> dict[str, bool]:
    """The drill's promise: nothing charged twice or left behind, pages unaffected."""
    ours, naive = results["this_system"], results["naive"]
    baseline = ours["pages"]["baseline"]["p99_ms"] or 0.0
    during = [ours["pages"][phase]["p99_ms"] or 0.0 for phase in ("outage", "degraded")]
    return {
        "this system: 0 double charges": ours["double_charges"] == 0,
        "this system: every payment final or needs_review": ours["not_final_at_end"] == 0,
        "this system: page p99 during the outage within 2x of before": max(during) <= 2 * baseline,
        "this system: no page errors": all(p["error_rate"] == 0 for p in ours["pages"].values()),
        "this system: email latency during the outage within 2x of before": _emails_keep_up(
            ours["emails"]
        ),
        **(
            {
                "one shared queue: emails stall behind the hanging provider": not _emails_keep_up(
                    results["emails_on_a_shared_queue"]
                )
            }
            if results["emails_on_a_shared_queue"]
            else {}
        ),
        "naive: the incident (double charges)": naive["double_charges"] > 0,
        "naive: the incident (page p99 during the outage over 2x of before)": max(
            naive["pages"][phase]["p99_ms"] or 0.0 for phase in ("outage", "degraded")
        )
        > 2 * (naive["pages"]["baseline"]["p99_ms"] or 0.0),
    }


EMAIL_NOISE_MS = 250.0  # below this, a latency is the machine's noise, not a stall


def _emails_keep_up(emails: dict[str, Any]) -> bool:
    """Every email delivered, and p99 during the outage within 2x of the baseline's."""
    baseline = max(emails["baseline"]["p99_ms"] or 0.0, EMAIL_NOISE_MS)
    during = [emails[phase]["p99_ms"] or 0.0 for phase in ("outage", "degraded")]
    unsent = sum(stats["unsent"] for stats in emails.values())
    return unsent == 0 and max(during) <= 2 * baseline


def print_table(results: dict[str, Any]) -> None:
    ours, naive = results["this_system"], results["naive"]
    print(f"{'':38} {'this system':>14} {'naive':>14}")
    for label, key in (
        ("payments attempted", "payments"),
        ("double charges", "double_charges"),
        ("payments not final at the end", "not_final_at_end"),
        ("requests the provider received", "provider_requests"),
        ("pay request p99 ms", "pay_request_p99_ms"),
    ):
        print(f"{label:38} {ours.get(key)!s:>14} {naive.get(key)!s:>14}")
    for phase in PHASES:
        for stat in ("p50_ms", "p99_ms", "error_rate"):
            print(
                f"{'page ' + phase + ' ' + stat:38} {ours['pages'][phase][stat]!s:>14} "
                f"{naive['pages'][phase][stat]!s:>14}"
            )
    for phase in PHASES:
        for key in ("web_busy", "workers_busy"):
            cells = []
            for side in (ours, naive):
                stat = side["saturation"][phase][key]
                cells.append(
                    "-"
                    if stat["mean"] is None
                    else f"{stat['mean']}/{stat['max']} of {stat['slots']}"
                )
            label = f"{key.replace('_', ' ')} {phase} mean/max"
            print(f"{label:38} {cells[0]:>14} {cells[1]:>14}")
    print(f"{'email latency (ms) p50 / p99 / unsent':38} {'own queue':>14} {'shared queue':>14}")
    shared = results["emails_on_a_shared_queue"]
    for phase in PHASES:
        cells = [
            f"{e[phase]['p50_ms']} / {e[phase]['p99_ms']} / {e[phase]['unsent']}" if e else "-"
            for e in (ours["emails"], shared)
        ]
        print(f"{'email ' + phase:38} {cells[0]:>14} {cells[1]:>14}")
    print(
        f"{'recovery -> every payment final (s)':38} "
        f"{ours.get('recovery_to_all_final_s')!s:>14} {'-':>14}"
    )
    print(
        f"{'breaker probes / rejected calls':38} "
        f"{str(ours.get('breaker_probes')) + ' / ' + str(ours.get('breaker_rejected_calls')):>14}"
    )


def draw(results: dict[str, Any], name: str, publish: bool = False) -> Path:
    """The HTML report of both systems side by side; with `publish`, docs/ gets the images."""
    path = report.write_report(
        RESULTS_DIR,
        name,
        "Outage drill: this system and the naive integration, same traffic and faults",
        {"This system": results["this_system"]["timeline"], "Naive": results["naive"]["timeline"]},
        notes={
            "breakers": "no breaker: every request waits for the provider",
            "queues": "no queue: the provider is called inside the web request",
        },
    )
    if publish:
        report.publish(RESULTS_DIR, name)
    return path
