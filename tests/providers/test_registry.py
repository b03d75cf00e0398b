"""Adding a provider is one new package plus one line in the registry: the toy provider
(tests/providers/toy/) gets its settings, client, queue, worker program, periodic
backfill and webhook route without any other file changing."""

from __future__ import annotations

import configparser
import hashlib
import hmac
import json
import time
from typing import Any

import pytest
from flask import Flask

from config import ConfigError, settings_from_env
from devtools.supervisor_conf import Layout, render
from jobs.schedule import periodic_jobs
from providers.registry import PROVIDERS, build_provider
from services.platform.queues import provider_queue_name
from settings import Settings
from tests.providers import toy


@pytest.fixture
def with_toy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PROVIDERS, "toy", toy.SPEC)  # the one line


@pytest.mark.usefixtures("with_toy")
def test_settings_come_from_the_providers_package() -> None:
    settings = settings_from_env({"PAYMENTS_PROVIDERS": "stripe,toy"})
    assert settings["TOY_GREETING"] == "hello"
    assert settings["TOY_WEBHOOK_SECRET"] == toy.DEV_WEBHOOK_SECRET
    production = {
        "APP_ENV": "production",
        "SECRET_KEY": "k" * 40,
        "DATABASE_URL": "postgresql+psycopg://db/x",
        "REDIS_URL": "redis://r/0",
        "PUBLIC_URL": "https://shop.example",
        "PAYMENTS_PROVIDERS": "toy",
        "TOY_WEBHOOK_SECRET": toy.DEV_WEBHOOK_SECRET,
    }
    with pytest.raises(ConfigError, match="TOY_WEBHOOK_SECRET is a development default"):
        settings_from_env(production)


def test_an_unregistered_provider_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown providers: toy"):
        settings_from_env({"PAYMENTS_PROVIDERS": "stripe,toy"})


@pytest.mark.usefixtures("with_toy")
def test_client_queue_worker_program_and_backfill() -> None:
    config = settings_from_env({"PAYMENTS_PROVIDERS": "toy"})
    client = build_provider("toy", config, Settings.from_config(config).http)
    assert type(client).__name__ == "ToyProvider"
    assert provider_queue_name("toy") == "payments-toy"
    layout = Layout(
        project_dir="/srv/app",
        run_dir="/run",
        bin_dir="/venv/bin",
        is_dev=False,
        web_bind="0.0.0.0:8000",
        web_workers=2,
        providers=["stripe", "toy"],
    )
    parser = configparser.RawConfigParser()
    parser.read_string(render(layout))
    program = parser["program:worker-toy"]
    assert program["command"].endswith("worker payments-toy --slots 3 --schedules none")
    schedule = periodic_jobs(
        Settings.from_config(settings_from_env({"PAYMENTS_PROVIDERS": "stripe,toy"}))
    )
    backfills = [job for job in schedule if job.args == ("toy",)]
    assert [job.queue for job in backfills] == ["payments-toy"]


@pytest.mark.usefixtures("with_toy")
def test_the_webhook_route_verifies_with_the_providers_scheme(app: Flask, make_app: Any) -> None:
    toy_settings = settings_from_env({"PAYMENTS_PROVIDERS": "stripe,toy"})
    toy_app = make_app(
        PAYMENTS_PROVIDERS=toy_settings["PAYMENTS_PROVIDERS"],
        TOY_WEBHOOK_SECRET=toy_settings["TOY_WEBHOOK_SECRET"],
    )
    body = json.dumps({"id": "toy_evt_1", "type": "toy.hello", "created": int(time.time())})
    signature = hmac.new(toy.DEV_WEBHOOK_SECRET.encode(), body.encode(), hashlib.sha256)
    client = toy_app.test_client()
    signed = client.post(
        "/webhooks/toy",
        data=body,
        content_type="application/json",
        headers={"X-Toy-Signature": signature.hexdigest()},
    )
    assert signed.status_code == 200 and signed.get_json() == {"status": "accepted"}
    forged = client.post(
        "/webhooks/toy",
        data=body,
        content_type="application/json",
        headers={"X-Toy-Signature": "0"},
    )
    assert forged.status_code == 400
    assert app.test_client().post("/webhooks/toy", data=body).status_code == 404  # not enabled
