"""The threaded worker's job timeouts: one watcher thread raises in the job's own thread."""

from __future__ import annotations

import threading
import time

import pytest
from rq.timeouts import BaseTimeoutException, JobTimeoutException

from commands.job_timeouts import SharedTimerDeathPenalty


def _spin(seconds: float) -> None:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        time.sleep(0.01)


def _run_in_thread(timeout: int, seconds: float, outcome: dict[str, object]) -> threading.Thread:
    def job() -> None:
        started = time.monotonic()
        try:
            with SharedTimerDeathPenalty(timeout, JobTimeoutException, job_id="x"):
                _spin(seconds)
            outcome["result"] = "finished"
        except JobTimeoutException as exc:
            outcome["result"] = exc
        outcome["seconds"] = time.monotonic() - started

    thread = threading.Thread(target=job)
    thread.start()
    return thread


def test_a_job_past_its_timeout_is_stopped_in_its_own_thread_and_the_others_go_on() -> None:
    stuck: dict[str, object] = {}
    quick: dict[str, object] = {}
    threads = [_run_in_thread(1, 30, stuck), _run_in_thread(60, 1.5, quick)]
    for thread in threads:
        thread.join(timeout=20)
    assert isinstance(stuck["result"], JobTimeoutException)
    assert isinstance(stuck["result"], BaseTimeoutException)
    assert "maximum timeout value (1 seconds)" in str(stuck["result"])
    assert 0.9 < float(stuck["seconds"]) < 5  # type: ignore[arg-type]  # the watcher's JSON is untyped
    assert quick["result"] == "finished"  # its deadline is a minute away


def test_a_job_that_ends_in_time_is_never_interrupted_afterwards() -> None:
    outcome: dict[str, object] = {}

    def job() -> None:
        with SharedTimerDeathPenalty(1, JobTimeoutException):
            pass
        try:
            _spin(1.5)  # past the cancelled deadline
            outcome["result"] = "finished"
        except JobTimeoutException as exc:
            outcome["result"] = exc

    thread = threading.Thread(target=job)
    thread.start()
    thread.join(timeout=10)
    assert outcome["result"] == "finished"


def test_many_jobs_share_one_watcher_thread() -> None:
    before = threading.active_count()
    penalties = [SharedTimerDeathPenalty(60, JobTimeoutException) for _ in range(50)]
    for penalty in penalties:
        penalty.setup_death_penalty()
    try:
        assert threading.active_count() <= before + 1
    finally:
        for penalty in penalties:
            penalty.cancel_death_penalty()


def test_no_timeout_sets_no_deadline() -> None:
    with SharedTimerDeathPenalty(0, JobTimeoutException):
        _spin(0.05)
    # What the body raises passes through.
    with pytest.raises(ValueError), SharedTimerDeathPenalty(5, JobTimeoutException):
        raise ValueError("the job's own error")
