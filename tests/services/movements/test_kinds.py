"""The kinds of money movement are declarations: each registered once by its domain,
with its own job ids; every kind's jobs are the same two dotted paths, which import (a
typo would only show when the first job ran)."""

from __future__ import annotations

import importlib

import pytest

from services.movements import kinds
from services.movements.kinds import KINDS, LOOKUP_JOB, SEND_JOB
from services.payments.kind import CHARGE
from services.refunds.kind import REFUND


def test_each_kind_is_registered_once_with_its_own_job_ids() -> None:
    assert KINDS["charge"] is CHARGE and KINDS["refund"] is REFUND
    assert kinds.named("refund") is REFUND
    assert len({kind.lookup_prefix for kind in KINDS.values()}) == len(KINDS)
    assert CHARGE.send_job_id(7) == "charge-7"
    assert REFUND.lookup_job_id(7, 2, "-deferred") == "refund-reconcile-7-2-deferred"
    assert (CHARGE.row_noun, REFUND.row_noun) == ("payment", "refund")
    for path in (SEND_JOB, LOOKUP_JOB):  # every kind's jobs exist
        module, _, name = path.rpartition(".")
        assert callable(getattr(importlib.import_module(module), name))
    with pytest.raises(KeyError):
        kinds.named("payout")  # no such kind: a job naming it fails, it moves nothing
