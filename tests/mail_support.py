"""The development mail sink on a free port, for tests (the same sink `make run` uses),
and SMTP servers that misbehave: one that never answers, one that refuses for now."""

from __future__ import annotations

import email
import email.policy
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from devtools.mail_sink import start
from devtools.servers import free_port


@dataclass
class MailSink:
    port: int
    directory: Path

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def messages(self) -> list[EmailMessage]:
        """What the sink accepted, oldest first."""
        found = []
        for path in sorted(self.directory.glob("*.eml")):
            parsed = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
            found.append(parsed)
        return found

    def clear(self) -> None:
        for path in self.directory.glob("*.eml"):
            path.unlink()


@contextmanager
def running_sink(directory: Path) -> Iterator[MailSink]:
    port = free_port()
    controller = start(port, directory)
    try:
        yield MailSink(port, directory)
    finally:
        controller.stop()


@contextmanager
def silent_smtp_server() -> Iterator[str]:
    """Accepts connections and never says a word: an SMTP server that hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
                held.append(conn)
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"smtp://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        listener.close()


@dataclass
class _Answer:
    reply: str

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        return self.reply


@contextmanager
def busy_smtp_server(reply: str = "451 4.3.0 try again later") -> Iterator[str]:
    """Answers every message with `reply` (by default a temporary refusal)."""
    port = free_port()
    controller = Controller(_Answer(reply), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield f"smtp://127.0.0.1:{port}"
    finally:
        controller.stop()
