"""The one registry of the jobs services enqueue by dotted path."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from services.platform import job_paths

ROOT = Path(__file__).resolve().parents[3]


def test_every_job_services_enqueue_by_name_exists() -> None:
    """Services name jobs by dotted path (they never import jobs/), all of them in one
    registry: each path must import to a callable, or the first enqueue of it fails in a
    worker, not here; and no other module of services/ writes a path of its own."""
    registry = ROOT / "services" / "platform" / "job_paths.py"
    for path in (ROOT / "services").rglob("*.py"):
        if path != registry:
            found = re.findall(r"[\"'](jobs\.[a-z_]+\.[a-z_]+)[\"']", path.read_text())
            assert found == [], f"{path.relative_to(ROOT)} names {found}: use job_paths"
    assert len(set(job_paths.ALL)) == len(job_paths.ALL) >= 8
    for dotted in job_paths.ALL:
        module, _, name = dotted.rpartition(".")
        assert callable(getattr(importlib.import_module(module), name, None)), dotted
