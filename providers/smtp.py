"""Email over SMTP (smtplib): the other external integration, with explicit timeouts and
outcomes classified like a provider's, so it goes through the same gateway and breaker.

`SMTP_URL`: `smtp://user:pass@host:587` (STARTTLS when the server offers it, required
with credentials), `smtps://user:pass@host:465` (TLS from the first byte), or
`smtp://host:port` without credentials (a local relay, the development sink).
"""

from __future__ import annotations

import logging
import smtplib
import ssl
import threading
import time
from dataclasses import dataclass
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

from providers.outcomes import Declined, NotSent, Succeeded, Unknown

Outcome = Succeeded | Declined | NotSent | Unknown
# The mail server's name beside the payment providers': its breaker, settings, metrics.
SMTP_GATEWAY = "smtp"
log = logging.getLogger(__name__)
# Refusals of our own credentials or set-up (530 authentication required, 534 mechanism
# too weak, 535 credentials invalid, 538 encryption required): never the message's fault.
OUR_CONFIGURATION_CODES = frozenset({530, 534, 535, 538})


@dataclass(frozen=True)
class SmtpSettings:
    host: str
    port: int
    username: str | None
    password: str | None
    implicit_tls: bool

    @classmethod
    def from_url(cls, url: str) -> SmtpSettings:
        """Parse SMTP_URL; ValueError naming what is wrong (never the password)."""
        parts = urlsplit(url)
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
            raise ValueError("SMTP_URL must look like smtp://user:pass@host:587 or smtps://...")
        try:
            port = parts.port or (465 if parts.scheme == "smtps" else 25)
        except ValueError:
            raise ValueError("SMTP_URL has a malformed port") from None
        return cls(
            parts.hostname,
            port,
            unquote(parts.username) if parts.username else None,
            unquote(parts.password) if parts.password else None,
            parts.scheme == "smtps",
        )


class SmtpMailer:
    """Hands messages to the SMTP server, one per call, over one kept session (connect,
    TLS and login once, not per message); never raises for what happens.

    A kept session is checked with NOOP before it carries a message (nothing is sent
    if the server closed it meanwhile: a new session takes over) and dropped after any
    error and after KEEP_IDLE_S unused (servers close idle sessions after minutes)."""

    KEEP_IDLE_S = 60.0

    def __init__(self, settings: SmtpSettings, timeout_s: float) -> None:
        self.settings = settings
        self.timeout_s = timeout_s  # each connect and each read
        self._client: smtplib.SMTP | None = None
        self._used_at = 0.0
        self._lock = threading.Lock()  # one message at a time on the session

    def send(self, message: EmailMessage) -> Outcome:
        with self._lock:
            client = self._kept()
            if client is None:
                opened = self._open()
                if not isinstance(opened, smtplib.SMTP):
                    return opened
                client = opened
            outcome = self._deliver(client, message)
            if isinstance(outcome, Succeeded) or _is_recipients(outcome):
                self._client, self._used_at = client, time.monotonic()
            else:
                _close(client)
                self._client = None
            return outcome

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                _close(self._client)
                self._client = None

    def _kept(self) -> smtplib.SMTP | None:
        client, self._client = self._client, None
        if client is None:
            return None
        if time.monotonic() - self._used_at > self.KEEP_IDLE_S:
            _close(client)
            return None
        try:
            if client.noop()[0] == 250:
                return client
        except (OSError, smtplib.SMTPException):
            pass
        _close(client)
        return None

    def _open(self) -> smtplib.SMTP | Outcome:
        s = self.settings
        try:
            client: smtplib.SMTP = (
                smtplib.SMTP_SSL(s.host, s.port, timeout=self.timeout_s)
                if s.implicit_tls
                else smtplib.SMTP(s.host, s.port, timeout=self.timeout_s)
            )
        except (OSError, smtplib.SMTPException) as exc:
            return NotSent(f"could not connect to {s.host}:{s.port}: {exc}")  # nothing left
        try:
            client.ehlo()
            if not s.implicit_tls and client.has_extn("starttls"):
                client.starttls(context=ssl.create_default_context())
                client.ehlo()
            elif s.username and not s.implicit_tls:
                _close(client)
                return NotSent("the server offers no STARTTLS: credentials stay here")
            if s.username and s.password:
                client.login(s.username, s.password)
        except Exception as exc:
            _close(client)
            return _classified(exc)
        return client

    @staticmethod
    def _deliver(client: smtplib.SMTP, message: EmailMessage) -> Outcome:
        try:
            refused = client.send_message(message)
        except Exception as exc:
            return _classified(exc)
        if refused:
            return _refused(refused)
        return Succeeded(str(message["Message-ID"]))


def _classified(exc: Exception) -> Outcome:
    """What an smtplib error means for the message."""
    if isinstance(exc, smtplib.SMTPRecipientsRefused):
        return _refused(exc.recipients)
    if isinstance(exc, smtplib.SMTPResponseException):
        what = f"SMTP {exc.smtp_code}: {exc.smtp_error!r}"[:300]
        if exc.smtp_code in OUR_CONFIGURATION_CODES:
            # Our credentials or set-up, not the message: retried (the breaker opens
            # and the dashboard and alerts say so) until an operator fixes SMTP_URL.
            log.error("SMTP refused our authentication (%s): check SMTP_URL", what)
            return NotSent(f"SMTP authentication or configuration: {what}")
        if 500 <= exc.smtp_code < 600:
            return Declined(f"smtp_{exc.smtp_code}", what)  # refused for good
        return NotSent(what, is_provider_failure=True)  # 4xx: try again later
    if isinstance(exc, TimeoutError | smtplib.SMTPServerDisconnected | OSError):
        # It may have been accepted just before the connection went: the retry sends
        # the same Message-ID, so the receiver can drop the duplicate.
        return Unknown(f"SMTP connection lost: {type(exc).__name__}: {exc}"[:300])
    if isinstance(exc, smtplib.SMTPException):
        return Unknown(f"SMTP error: {exc}"[:300])
    raise exc


def _is_recipients(outcome: Outcome) -> bool:
    """A refusal of the recipients only: the session is still good."""
    text = outcome.message if isinstance(outcome, Declined) else getattr(outcome, "reason", "")
    return isinstance(outcome, Declined | NotSent) and text.startswith("recipient refused")


def _close(client: smtplib.SMTP) -> None:
    try:
        client.quit()
    except (OSError, smtplib.SMTPException):
        client.close()


def _refused(recipients: dict[str, tuple[int, bytes]]) -> Outcome:
    codes = {code for code, _ in recipients.values()}
    reason = "recipient refused: " + ", ".join(
        f"{address} ({code})" for address, (code, _) in recipients.items()
    )
    if all(500 <= code < 600 for code in codes):
        return Declined("recipient_refused", reason[:300])
    return NotSent(reason[:300])
