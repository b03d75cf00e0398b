"""Logins are throttled per account and address (failures only), answer alike for
unknown and known emails, and a logout ends the session everywhere: a replayed cookie
opens nothing."""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

from services.accounts.customers import create_customer
from tests.accounts_support import ATTACKER, OWNER, replayed_session, sign_in
from tests.helpers import csrf_token_from


def _customer(app: Flask, email: str = "victim@example.com") -> str:
    with app.app_context():
        create_customer(email, "the-right-password", app.config["CURRENCIES"])
    return email


def test_guessing_a_customer_password_is_stopped(app: Flask, client: FlaskClient) -> None:
    email = _customer(app)
    answers = [sign_in(client, email, f"guess-{n}", ATTACKER).status_code for n in range(8)]
    assert answers == [400] * 5 + [429] * 3
    # Even the right password gets nowhere from the guessing address now.
    assert sign_in(client, email, "the-right-password", ATTACKER).status_code == 429
    # The owner, elsewhere, is not locked out by someone else's guessing.
    assert sign_in(app.test_client(), email, "the-right-password", OWNER).status_code == 302


def test_one_address_guessing_many_accounts_is_stopped(app: Flask, client: FlaskClient) -> None:
    answers = [
        sign_in(client, f"someone{n}@example.com", "guess", ATTACKER).status_code for n in range(22)
    ]
    assert answers[:20] == [400] * 20 and answers[20:] == [429, 429]


def test_a_successful_login_clears_its_accounts_failures(app: Flask) -> None:
    email = _customer(app)
    for _ in range(2):
        client = app.test_client()
        for n in range(4):
            assert sign_in(client, email, f"typo-{n}", OWNER).status_code == 400
        assert sign_in(client, email, "the-right-password", OWNER).status_code == 302


def test_unknown_and_known_emails_answer_alike(app: Flask, client: FlaskClient) -> None:
    email = _customer(app)
    timings: dict[str, list[float]] = {"known": [], "unknown": []}
    pages = set()
    for n in range(4):
        for kind, who in (("known", email), ("unknown", f"nobody{n}@example.com")):
            where = {"REMOTE_ADDR": f"10.1.{n}.{len(kind)}"}
            started = time.perf_counter()
            response = sign_in(app.test_client(), who, "wrong-password", where)
            timings[kind].append(time.perf_counter() - started)
            assert response.status_code == 400
            pages.add(response.get_data(as_text=True).split("csrf_token")[0])
    assert len(pages) == 1  # the same page, word for word (before the per-form token)
    # An unknown email still costs a password check: not a fraction of a wrong password.
    assert statistics.median(timings["unknown"]) > 0.3 * statistics.median(timings["known"])


def test_a_customer_cookie_replayed_after_logout_opens_nothing(
    app: Flask, client: FlaskClient
) -> None:
    email = _customer(app)
    assert sign_in(client, email, "the-right-password", OWNER).status_code == 302
    cookie = client.get_cookie("session")
    assert cookie is not None
    copy = replayed_session(app, cookie.value)
    assert copy.get("/wallet").status_code == 200  # the copy works...
    token = csrf_token_from(client.get("/").get_data(as_text=True))
    client.post("/logout", data={"csrf_token": token})
    replayed = replayed_session(app, cookie.value).get("/wallet")
    assert replayed.status_code == 302 and "/login" in replayed.headers["Location"]


def test_behind_a_balancer_each_client_is_counted_not_the_balancer(
    app: Flask, make_app: Any
) -> None:
    """The reported hole: behind one proxy every login came from the balancer's address, so
    five wrong guesses by anyone locked the real admin and every customer out."""
    email = _customer(app)
    balancer = {"REMOTE_ADDR": "10.0.0.2"}
    behind = make_app(TRUSTED_PROXIES=1)
    attacker, owner = behind.test_client(), behind.test_client()

    def through(client_address: str) -> dict[str, Any]:
        return {**balancer, "HTTP_X_FORWARDED_FOR": client_address}

    answers = [
        sign_in(attacker, email, f"guess-{n}", through("203.0.113.9")).status_code for n in range(6)
    ]
    assert answers == [400] * 5 + [429]
    assert sign_in(owner, email, "the-right-password", through("198.51.100.4")).status_code == 302
    # Without trusted proxies the header is anyone's: it is ignored, the socket counts.
    plain = app.test_client()
    spoofed = {**ATTACKER, "HTTP_X_FORWARDED_FOR": "198.51.100.77"}
    other = _customer(app, "other@example.com")
    assert [sign_in(plain, other, f"g{n}", spoofed).status_code for n in range(6)][-1] == 429
    assert sign_in(plain, other, "the-right-password", ATTACKER).status_code == 429


def test_one_address_making_many_accounts_is_stopped(app: Flask) -> None:
    client = app.test_client()

    def sign_up(n: int, where: dict[str, str]) -> int:
        token = csrf_token_from(client.get("/signup", environ_base=where).get_data(as_text=True))
        return client.post(
            "/signup",
            data={"email": f"bulk{n}@example.com", "password": "password123", "csrf_token": token},
            environ_base=where,
        ).status_code

    answers = [sign_up(n, ATTACKER) for n in range(12)]
    assert answers == [303] * 10 + [429, 429]
    assert sign_up(99, OWNER) == 303  # another address is not held back


def test_fifty_tries_at_once_get_at_most_the_limit_through(app: Flask) -> None:
    """Real threads on a barrier, each checking a password (the slow part): the count and
    the limit are one step, so no try slips in between another's check and its count."""
    from services.accounts import login_throttle

    barrier, answers = threading.Barrier(50), []

    def guess(n: int) -> None:
        with app.app_context():
            barrier.wait()
            try:
                login_throttle.sign_in("customer", "victim@example.com", f"g{n}", "10.9.9.9", _none)
                answers.append("checked")
            except login_throttle.TooManyAttemptsError:
                answers.append("refused")

    threads = [threading.Thread(target=guess, args=(n,)) for n in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert answers.count("checked") == login_throttle.MAX_FAILURES_PER_PAIR
    assert answers.count("refused") == 50 - login_throttle.MAX_FAILURES_PER_PAIR


def _none(email: str) -> None:
    return None


def test_successful_logins_from_one_office_are_not_failures(app: Flask) -> None:
    """Each attempt is counted first; a success gives the address's count back."""
    for n in range(21):  # past the address's limit of 20
        email = _customer(app, f"colleague{n}@example.com")
        assert sign_in(app.test_client(), email, "the-right-password", OWNER).status_code == 302
