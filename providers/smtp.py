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
    """Hands one message to the SMTP server per call; never raises for what happens."""

    def __init__(self, settings: SmtpSettings, timeout_s: float) -> None:
        self.settings = settings
        self.timeout_s = timeout_s  # each connect and each read

    def send(self, message: EmailMessage) -> Outcome:
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
            with client:
                client.ehlo()
                if not s.implicit_tls and client.has_extn("starttls"):
                    client.starttls(context=ssl.create_default_context())
                    client.ehlo()
                elif s.username and not s.implicit_tls:
                    return NotSent("the server offers no STARTTLS: credentials stay here")
                if s.username and s.password:
                    client.login(s.username, s.password)
                refused = client.send_message(message)
        except smtplib.SMTPRecipientsRefused as exc:
            return _refused(exc.recipients)
        except smtplib.SMTPResponseException as exc:
            what = f"SMTP {exc.smtp_code}: {exc.smtp_error!r}"[:300]
            if exc.smtp_code in OUR_CONFIGURATION_CODES:
                # Our credentials or set-up, not the message: retried (the breaker opens
                # and the dashboard and alerts say so) until an operator fixes SMTP_URL.
                log.error("SMTP refused our authentication (%s): check SMTP_URL", what)
                return NotSent(f"SMTP authentication or configuration: {what}")
            if 500 <= exc.smtp_code < 600:
                return Declined(f"smtp_{exc.smtp_code}", what)  # refused for good
            return NotSent(what, is_provider_failure=True)  # 4xx: try again later
        except (TimeoutError, smtplib.SMTPServerDisconnected, OSError) as exc:
            # It may have been accepted just before the connection went: the retry sends
            # the same Message-ID, so the receiver can drop the duplicate.
            return Unknown(f"SMTP connection lost: {type(exc).__name__}: {exc}"[:300])
        except smtplib.SMTPException as exc:
            return Unknown(f"SMTP error: {exc}"[:300])
        if refused:
            return _refused(refused)
        return Succeeded(str(message["Message-ID"]))


def _refused(recipients: dict[str, tuple[int, bytes]]) -> Outcome:
    codes = {code for code, _ in recipients.values()}
    reason = "recipient refused: " + ", ".join(
        f"{address} ({code})" for address, (code, _) in recipients.items()
    )
    if all(500 <= code < 600 for code in codes):
        return Declined("recipient_refused", reason[:300])
    return NotSent(reason[:300])
