"""The sandbox's request context: a request hung across a reset never charges into the new
world (its generation is checked when it wakes up)."""

from __future__ import annotations

from typing import Any

import requests

from tests.sandbox_support import create


def test_a_request_hung_across_a_reset_does_not_charge_the_new_world(sandbox: Any) -> None:
    import threading

    sandbox.add_fault("hang", seconds=1.0, dialect="stripe", endpoint="create")
    answers: list[Any] = []

    def hung() -> None:
        try:
            answers.append(create(sandbox, "key-hung").status_code)
        except requests.RequestException as exc:
            answers.append(type(exc).__name__)

    thread = threading.Thread(target=hung)
    thread.start()
    sandbox.wait_for_request("create")  # it hangs inside the provider now
    sandbox.reset()  # the next test starts while the old request still hangs
    thread.join()
    assert answers and answers[0] != 200  # it was cut off, not processed
    assert sandbox.charges()["data"] == []
