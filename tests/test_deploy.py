"""The ops stack's files (deploy/): the Prometheus alert rules and the Grafana dashboard
use only metrics the app exposes, and promtool's own tests of the rules pass."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
NAME = re.compile(r"([a-z_][a-z0-9_]*)\{")  # a metric name with its label matchers


def _exposed(client: FlaskClient) -> set[str]:
    text = client.get("/metrics").get_data(as_text=True)
    names = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
    for line in text.splitlines():  # families without samples yet (counters not counted)
        if line.startswith("# TYPE "):
            names.add(line.split()[2])
    return names


def _alert_expressions() -> list[str]:
    rules = (DEPLOY / "prometheus" / "alerts.yml").read_text()
    return [line.split("expr:", 1)[1] for line in rules.splitlines() if "expr:" in line]


def _panel_expressions() -> list[str]:
    dashboard = json.loads((DEPLOY / "grafana" / "payments.json").read_text())
    return [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]


def test_rules_and_panels_use_metrics_the_app_exposes(client: FlaskClient) -> None:
    exposed = _exposed(client)
    used = {
        name for expr in _alert_expressions() + _panel_expressions() for name in NAME.findall(expr)
    }
    assert len(_alert_expressions()) == 10 and len(used) >= 10
    missing = {
        name
        for name in used
        if name not in exposed
        and name.removesuffix("_bucket") not in exposed
        and name.removesuffix("_total") not in exposed
    }
    assert missing == set()


def test_promtool_checks_and_tests_the_rules() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    folder = DEPLOY / "prometheus"
    for args in (["check", "rules", "alerts.yml"], ["test", "rules", "alerts_test.yml"]):
        done = subprocess.run(
            [promtool, *args], cwd=folder, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stdout + done.stderr
