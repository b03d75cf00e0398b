"""The development sink keeps each message it accepts as an .eml file named by its id."""

from __future__ import annotations

import smtplib
from email.message import EmailMessage
from pathlib import Path

from tests.mail_support import running_sink


def test_each_message_is_an_eml_file(tmp_path: Path) -> None:
    with running_sink(tmp_path) as sink:
        message = EmailMessage()
        message["From"], message["To"], message["Subject"] = "a@x", "b@y", "hello"
        message["Message-ID"] = "<outbox-3.99@localhost>"
        message.set_content("body")
        with smtplib.SMTP("127.0.0.1", sink.port, timeout=5) as client:
            client.send_message(message)
        [path] = list(tmp_path.glob("*.eml"))
        assert path.name.endswith("-outbox-3.99_localhost.eml")
        assert [m["Subject"] for m in sink.messages()] == ["hello"]
