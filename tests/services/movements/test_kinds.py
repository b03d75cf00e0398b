"""The kinds of money movement are data: distinct jobs, ids that name the kind, and
dotted job paths that import (a typo would only show when the first job ran)."""

from __future__ import annotations

import importlib

from services.movements.kinds import CHARGE, KINDS, REFUND


def test_each_kind_has_its_own_jobs_and_job_ids() -> None:
    assert len({kind.send_job for kind in KINDS}) == len(KINDS)
    assert len({kind.lookup_job for kind in KINDS}) == len(KINDS)
    assert CHARGE.send_job_id(7) == "charge-7"
    assert REFUND.lookup_job_id(7, 2, "-deferred") == "refund-reconcile-7-2-deferred"
    for kind in KINDS:  # every dotted path names a job that exists
        for path in (kind.send_job, kind.lookup_job):
            module, _, name = path.rpartition(".")
            assert callable(getattr(importlib.import_module(module), name))
