"""`make run` (devtools/run.py): the whole system on its embedded PostgreSQL, Redis and
mail sink, on ports a person can choose; a paid order; Ctrl-C leaves nothing running."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from devtools.servers import free_port

PROJECT_DIR = Path(__file__).resolve().parents[2]
PORT_NAMES = ("WEB_PORT", "SANDBOX_PORT", "REDIS_PORT", "POSTGRES_PORT", "MAIL_SINK_PORT")
START_TIMEOUT_S = 120  # a first run creates the database cluster on a busy machine


def _without_urls() -> dict[str, str]:
    env = {**os.environ}
    names = ("DATABASE_URL", "DATABASE_OWNER_URL", "REDIS_URL", "SMTP_URL", "SANDBOX_URL")
    for name in (*names, "PUBLIC_URL", "APP_ENV"):
        env.pop(name, None)
    return env


def _is_listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_a_taken_port_stops_make_run_naming_the_variable_to_set() -> None:
    ports = {name: free_port() for name in PORT_NAMES}
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", ports["WEB_PORT"]))
        busy.listen()
        done = subprocess.run(
            [sys.executable, "-m", "devtools.run"],
            cwd=PROJECT_DIR,
            env={**_without_urls(), **{k: str(v) for k, v in ports.items()}},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1
    assert f"port {ports['WEB_PORT']} (WEB_PORT) on 127.0.0.1 is in use" in done.stderr
    assert f"WEB_PORT={ports['WEB_PORT'] + 1} make run" in done.stderr


@pytest.fixture
def run_dir() -> Iterator[Path]:
    # Not pytest's tmp_path: its folders are private to us, and as root the database
    # server runs as another account that must reach its data folder.
    path = Path(tempfile.mkdtemp(prefix="make-run-"))
    path.chmod(0o755)
    yield path
    subprocess.run(["rm", "-rf", str(path)], check=False)


def test_make_run_serves_a_paid_order_on_its_own_postgresql_and_stops_on_ctrl_c(
    run_dir: Path,
) -> None:
    ports = {name: free_port() for name in PORT_NAMES}
    env = {**_without_urls(), "MAKE_RUN_DIR": str(run_dir), **{k: str(v) for k, v in ports.items()}}
    output = run_dir / "make-run.out"
    with open(output, "w") as out:
        run = subprocess.Popen(
            [sys.executable, "-m", "devtools.run"],
            cwd=PROJECT_DIR,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a terminal's process group: Ctrl-C reaches all of it
        )
    try:
        _wait_for_output(output, "Ctrl-C stops everything", run)
        printed = output.read_text()
        assert "could not enqueue" not in printed  # seeded only once Redis was up
        assert f"admin      http://127.0.0.1:{ports['WEB_PORT']}/admin/" in printed
        # The app's role, which owns nothing (the migrations ran as the cluster's owner).
        assert f"postgresql+psycopg://payments_app@127.0.0.1:{ports['POSTGRES_PORT']}/" in printed
        _pay_an_order(env, ports, run_dir)
    finally:
        os.killpg(run.pid, signal.SIGINT)
        run.wait(timeout=90)
    still_listening = [name for name, port in ports.items() if _is_listening(port)]
    assert still_listening == []
    left = subprocess.run(["pgrep", "-f", str(run_dir)], capture_output=True, text=True)
    assert left.stdout.strip() == "", "processes left running after Ctrl-C"
    assert (run_dir / "postgres" / "data" / "PG_VERSION").exists()  # kept for the next run


def _wait_for_output(path: Path, text: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while text not in path.read_text():
        assert process.poll() is None, path.read_text()[-3000:]
        assert time.monotonic() < deadline, path.read_text()[-3000:]
        time.sleep(0.2)


def _wait_until_served(url: str, run_dir: Path) -> None:
    """The banner comes once every program is started; its web workers may still be
    booting on a loaded machine (a parallel test run): wait for an answer first. If none
    comes, the failure shows what the web program's logs say."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            if requests.get(url, timeout=5).status_code < 500:
                return
        except requests.RequestException:
            pass
        assert time.monotonic() < deadline, f"{url} never answered\n{_web_logs(run_dir)}"
        time.sleep(0.5)


def _web_logs(run_dir: Path) -> str:
    logs = run_dir / "logs"
    return "\n".join(
        f"--- {log.name}\n{log.read_text(errors='replace')[-2000:]}"
        for log in [*sorted(logs.glob("*web*")), logs / "supervisord.log"]
        if log.exists()
    )


def _pay_an_order(env: dict[str, str], ports: dict[str, int], run_dir: Path) -> None:
    created = subprocess.run(
        [sys.executable, "-m", "flask", "--app", "app", "customers", "create", "run@example.com"],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    token = created.stdout.split("api token: ")[1].strip()
    web = f"http://127.0.0.1:{ports['WEB_PORT']}"
    _wait_until_served(f"{web}/healthz", run_dir)
    auth = {"Authorization": f"Bearer {token}"}
    order = requests.post(
        f"{web}/api/orders",
        json={"items": [{"sku": "MUG-001", "quantity": 2}]},
        headers=auth,
        timeout=30,
    )
    assert order.status_code == 201, order.text
    paid = requests.post(
        f"{web}/api/orders/{order.json()['id']}/payments",
        json={"payment_method": "pm_card_visa"},
        headers={**auth, "Idempotency-Key": str(uuid.uuid4())},
        timeout=30,
    )
    assert paid.status_code == 201, paid.text
    deadline = time.monotonic() + 30
    while True:
        status = requests.get(
            f"{web}/api/payments/{paid.json()['id']}", headers=auth, timeout=30
        ).json()["status"]
        if status == "succeeded" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status == "succeeded"
    ledger = requests.get(
        f"http://127.0.0.1:{ports['SANDBOX_PORT']}/_sandbox/charges", timeout=30
    ).json()
    assert [c["amount"] for c in ledger["data"] if c["status"] == "succeeded"] == [2800]
