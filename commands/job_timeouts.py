"""Job timeouts for the threaded worker: one watcher thread for every slot's job.

SIGALRM reaches only the main thread, so a job in a slot is stopped the way RQ's
TimerDeathPenalty does it: its thread gets the timeout exception raised in it
(PyThreadState_SetAsyncExc; it lands once a blocking call returns). RQ starts a timer
thread per job for that (about 160 us of CPU a job, measured in a loop); here one
watcher per process keeps every running job's deadline in a heap and raises in the
thread whose deadline passed. A job that ends first cancels its deadline."""

from __future__ import annotations

import ctypes
import functools
import heapq
import itertools
import threading
import time
from dataclasses import dataclass
from typing import Any

from rq.timeouts import BaseDeathPenalty, JobTimeoutException


@dataclass
class _Deadline:
    thread_id: int
    exception: type[BaseException]
    is_done: bool = False  # cancelled, or raised


class _Watcher:
    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._heap: list[tuple[float, int, _Deadline]] = []
        self._order = itertools.count()  # ties: first set, first due
        self._thread: threading.Thread | None = None

    def add(self, at: float, deadline: _Deadline) -> None:
        with self._changed:
            heapq.heappush(self._heap, (at, next(self._order), deadline))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="job-timeouts", daemon=True)
                self._thread.start()
            if self._heap[0][2] is deadline:  # sooner than what the watcher waits for
                self._changed.notify()

    def cancel(self, deadline: _Deadline) -> None:
        with self._changed:  # never after the watcher decided to raise: it holds this lock
            deadline.is_done = True

    def _run(self) -> None:
        with self._changed:
            while True:
                now = time.monotonic()
                while self._heap and (self._heap[0][2].is_done or self._heap[0][0] <= now):
                    _, _, deadline = heapq.heappop(self._heap)
                    if not deadline.is_done:
                        deadline.is_done = True
                        _raise_in(deadline.thread_id, deadline.exception)
                self._changed.wait(self._heap[0][0] - now if self._heap else None)


_WATCHER = _Watcher()


def _raise_in(thread_id: int, exception: type[BaseException]) -> None:
    found = ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(thread_id), ctypes.py_object(exception)
    )
    if found > 1:  # never more than the one thread: undo
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), None)


@functools.cache
def _with_message(exception: type[BaseException], timeout: int) -> type[BaseException]:
    """`exception` saying the timeout (an exception raised in another thread is made
    from its class alone), under the same name."""

    def __init__(self: BaseException, *args: Any) -> None:
        exception.__init__(
            self, *(args or (f"Task exceeded maximum timeout value ({timeout} seconds)",))
        )

    return type(
        exception.__name__, (exception,), {"__init__": __init__, "__module__": exception.__module__}
    )


class SharedTimerDeathPenalty(BaseDeathPenalty):
    """RQ's job timeout for a job in a thread, kept by the process's one watcher."""

    def __init__(
        self, timeout: int, exception: type[BaseException] = JobTimeoutException, **kwargs: Any
    ) -> None:
        super().__init__(timeout, exception, **kwargs)
        self._deadline: _Deadline | None = None

    def setup_death_penalty(self) -> None:
        if self._timeout <= 0:
            return
        self._deadline = _Deadline(
            threading.get_ident(), _with_message(self._exception, self._timeout)
        )
        _WATCHER.add(time.monotonic() + self._timeout, self._deadline)

    def cancel_death_penalty(self) -> None:
        if self._deadline is not None:
            _WATCHER.cancel(self._deadline)
            self._deadline = None
