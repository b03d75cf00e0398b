"""`python -m bench.drills outage|chaos`: the drills, outside the product (which never
imports bench/). Each starts the whole system it drills on throwaway servers."""

from __future__ import annotations

import click

drill_cli = click.Group("drills", help="Reproduce provider outages against the whole system.")
PUBLISH_OPTION = click.option(
    "--publish",
    is_flag=True,
    help="Also copy the report's images into docs/images/drills (the ones docs/ shows).",
)


@drill_cli.command("outage")
@click.option(
    "--viewers", default=4, show_default=True, help="Customers browsing non-payment pages."
)
@click.option("--pay-rate", default=2.0, show_default=True, help="Payments per second.")
@click.option("--phase-s", default=8.0, show_default=True, help="Length of each phase.")
@click.option("--hang-s", default=8.0, show_default=True, help="How long the provider hangs.")
@click.option(
    "--naive-timeout-s",
    default=5.0,
    show_default=True,
    help="The naive integration's read timeout (its 'default').",
)
@PUBLISH_OPTION
def outage_command(
    viewers: int,
    pay_rate: float,
    phase_s: float,
    hang_s: float,
    naive_timeout_s: float,
    publish: bool,
) -> None:
    """Baseline, outage, degraded, recovery: this system next to the naive integration."""
    from bench.drills import outage

    results = outage.run(viewers, pay_rate, phase_s, hang_s, naive_timeout_s, publish=publish)
    if not all(results["verdict"].values()):
        raise SystemExit(1)


@drill_cli.command("chaos")
@click.option("--seed", type=int, default=None, help="Replay a run (printed at the start).")
@click.option("--operations", default=200, show_default=True, help="Customer operations.")
@click.option("--customers", default=4, show_default=True, help="Concurrent API clients.")
@click.option("--fault-every-s", default=3.0, show_default=True, help="Seconds per fault.")
@click.option("--settle-s", default=120.0, show_default=True, help="Longest wait at the end.")
@PUBLISH_OPTION
def chaos_command(
    seed: int | None,
    operations: int,
    customers: int,
    fault_every_s: float,
    settle_s: float,
    publish: bool,
) -> None:
    """Payments, top-ups and wallet debits under random faults; exit 1 if an invariant breaks."""
    from bench.drills import chaos

    results = chaos.run(seed, operations, customers, fault_every_s, settle_s, publish)
    if not results["ok"]:
        raise SystemExit(1)


if __name__ == "__main__":
    drill_cli(prog_name="python -m bench.drills")
