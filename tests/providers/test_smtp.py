"""SMTP_URL parsing and how each SMTP answer is classified (the real sink, a busy one, a
silent one, a closed port)."""

from __future__ import annotations

from email.message import EmailMessage
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from devtools.servers import free_port
from providers.outcomes import Declined, NotSent, Succeeded, Unknown
from providers.smtp import SmtpMailer, SmtpSettings
from tests.mail_support import busy_smtp_server, silent_smtp_server


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("smtp://127.0.0.1:8025", ("127.0.0.1", 8025, None, None, False)),
        ("smtp://user:p%40ss@mail.example:587", ("mail.example", 587, "user", "p@ss", False)),
        ("smtps://user:pw@mail.example", ("mail.example", 465, "user", "pw", True)),
    ],
)
def test_smtp_urls(url: str, expected: tuple[Any, ...]) -> None:
    s = SmtpSettings.from_url(url)
    assert (s.host, s.port, s.username, s.password, s.implicit_tls) == expected


@pytest.mark.parametrize("url", ["http://mail.example", "smtp://", "smtp://h:notaport"])
def test_bad_smtp_urls_never_echo_a_password(url: str) -> None:
    with pytest.raises(ValueError, match="SMTP_URL") as refused:
        SmtpSettings.from_url(url)
    assert "notaport" not in str(refused.value)


def _message() -> EmailMessage:
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "shop@localhost", "a@example.com", "x"
    message["Message-ID"] = "<outbox-1.1@localhost>"
    message.set_content("hello")
    return message


def _send(url: str, timeout_s: float = 2.0) -> Any:
    mailer = SmtpMailer(SmtpSettings.from_url(url), timeout_s)
    try:
        return mailer.send(_message())
    finally:
        mailer.close()


def test_each_answer_is_classified(live_mail_sink: Any) -> None:
    assert isinstance(_send(live_mail_sink.url), Succeeded)
    assert isinstance(_send(f"smtp://127.0.0.1:{free_port()}"), NotSent)  # nothing left us
    with busy_smtp_server() as url:
        busy = _send(url)
    assert isinstance(busy, NotSent) and "451" in busy.reason  # try again later
    with silent_smtp_server() as url:
        assert isinstance(_send(url, timeout_s=0.3), NotSent | Unknown)  # never answered


def test_credentials_never_travel_in_clear(live_mail_sink: Any) -> None:
    """The sink offers no STARTTLS: a password stays here rather than cross the wire."""
    url = live_mail_sink.url.replace("smtp://", "smtp://user:secret@")
    refused = _send(url)
    assert isinstance(refused, NotSent) and "STARTTLS" in refused.reason


def test_a_permanent_refusal_is_final() -> None:
    with busy_smtp_server("554 5.7.1 rejected as spam") as url:
        refused = _send(url)
    assert isinstance(refused, Declined) and refused.code == "smtp_554"


def test_a_refusal_of_our_own_authentication_is_retried_not_final() -> None:
    """The reported hole: a 530 failed the message at once and for good, though the fault
    was our SMTP_URL, not the message."""
    with busy_smtp_server("530 5.7.0 Authentication required") as url:
        outcome = _send(url)
    assert isinstance(outcome, NotSent) and outcome.is_provider_failure
    assert "authentication or configuration" in outcome.reason


class _Peers:
    """An SMTP server that notes the connection (client port) each message came on."""

    def __init__(self) -> None:
        self.ports: list[int] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.ports.append(session.peer[1])
        return "250 OK"


def test_messages_share_one_kept_session_and_a_closed_one_is_replaced() -> None:
    peers, port = _Peers(), free_port()
    server = Controller(peers, hostname="127.0.0.1", port=port)
    server.start()
    mailer = SmtpMailer(SmtpSettings.from_url(f"smtp://127.0.0.1:{port}"), 2.0)
    try:
        assert all(isinstance(mailer.send(_message()), Succeeded) for _ in range(3))
        assert len(peers.ports) == 3 and len(set(peers.ports)) == 1  # one session
        server.stop()  # the server goes away, closing the kept session
        server = Controller(peers, hostname="127.0.0.1", port=port)
        server.start()
        assert isinstance(mailer.send(_message()), Succeeded)  # NOOP failed: a new one
        assert len(peers.ports) == 4 and peers.ports[3] != peers.ports[0]
    finally:
        mailer.close()
        server.stop()
