"""supervisor/ configs come from one renderer and one list of providers."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from devtools.supervisor_conf import STOP_WAIT_S, Layout, checked_in_layout, render
from services.platform.queues import JOB_TIMEOUT_S

SUPERVISOR_DIR = Path(__file__).resolve().parents[2] / "supervisor"


@pytest.mark.parametrize("mode", ["production", "dev", "web", "worker", "worker-scheduler"])
def test_checked_in_config_matches_the_renderer(mode: str) -> None:
    checked_in = (SUPERVISOR_DIR / f"{mode}.conf").read_text()
    assert checked_in == render(checked_in_layout(mode)), (
        f"supervisor/{mode}.conf is stale: python -m devtools.supervisor_conf {mode} > "
        f"supervisor/{mode}.conf"
    )


def test_one_worker_program_per_provider_queue() -> None:
    layout = Layout(
        project_dir="/app",
        run_dir="/run",
        bin_dir="/venv/bin",
        is_dev=False,
        web_bind="0.0.0.0:8000",
        web_workers=2,
        providers=["stripe", "braintree"],
    )
    parser = configparser.RawConfigParser()
    parser.read_string(render(layout))
    workers = {s: parser[s] for s in parser.sections() if s.startswith("program:worker-")}
    assert set(workers) == {
        "program:worker-stripe",
        "program:worker-braintree",
        "program:worker-maintenance",
        "program:worker-notifications",  # the emails' bulkhead
    }
    # One threaded worker per provider queue, with the slots of the provider's spec; RQ's
    # scheduler (a fork of its worker) only in maintenance, for every queue.
    assert workers["program:worker-braintree"]["command"].endswith(
        "worker payments-braintree --slots 16 --schedules none"
    )
    assert workers["program:worker-notifications"]["command"].endswith(
        "worker notifications --schedules none"
    )
    assert workers["program:worker-maintenance"]["command"].endswith(
        "worker maintenance --schedules every"
    )
    assert "program:mail" not in parser.sections()  # the sink is for development only
    assert workers["program:worker-stripe"]["command"].endswith("--slots 64 --schedules none")
    assert "numprocs" not in workers["program:worker-stripe"]
    for section in workers.values():
        assert int(section["stopwaitsecs"]) == STOP_WAIT_S > JOB_TIMEOUT_S
        assert section["stopsignal"] == "TERM"
    assert "program:redis" not in parser.sections()  # production brings its own Redis
    assert "program:postgres" not in parser.sections()  # and its own database
    assert "program:sandbox" not in parser.sections()


def test_the_development_database_stops_fast_and_starts_first() -> None:
    parser = configparser.RawConfigParser()
    parser.read_string(render(checked_in_layout("dev")))
    postgres = parser["program:postgres"]
    assert postgres["stopsignal"] == "INT"  # PostgreSQL's fast shutdown (TERM waits for clients)
    assert postgres["command"].endswith(
        "-m devtools.postgres --data-dir %(here)s/../instance/postgres --port 5439"
    )
    assert int(postgres["priority"]) < int(parser["program:web"]["priority"])
    assert list(parser["program:postgres"]).count("stopsignal") == 1


def test_several_hosts_split_the_programs_and_schedule_once() -> None:
    programs = {}
    for mode in ("web", "worker", "worker-scheduler"):
        parser = configparser.RawConfigParser()
        parser.read_string(render(checked_in_layout(mode)))
        programs[mode] = {s for s in parser.sections() if s.startswith("program:")}
    assert programs["web"] == {"program:web"}
    assert "program:web" not in programs["worker"] and "program:scheduler" not in programs["worker"]
    assert programs["worker-scheduler"] == programs["worker"] | {"program:scheduler"}
    assert {"program:worker-stripe", "program:worker-maintenance"} <= programs["worker"]


def test_the_access_log_keeps_no_query_string() -> None:
    """The bank's return carries the PaymentIntent's client secret in its query."""
    parser = configparser.RawConfigParser()
    parser.read_string(render(checked_in_layout("production")))
    command = parser["program:web"]["command"].replace("%%", "%")
    assert "--access-logformat" in command and "%(U)s" in command
    assert not any(field in command for field in ("%(r)s", "%(q)s", "%(f)s"))
