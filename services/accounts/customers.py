"""Customer accounts: sign-up, password login and API tokens."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from contextlib import suppress

from email_validator import EmailNotValidError, validate_email
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from werkzeug.security import generate_password_hash

from extensions import db
from models import Customer, EmailKind, Wallet
from models.money import N_
from models.types import parse_row_id
from services.accounts import login_throttle
from services.accounts.login_throttle import TooManyAttemptsError
from services.notifications.outbox import queue_email

MIN_PASSWORD_LENGTH = 8  # characters other than spaces (docs/security.md)


def is_password_long_enough(password: str, minimum: int = MIN_PASSWORD_LENGTH) -> bool:
    """At least `minimum` characters besides whitespace: twelve spaces are no password."""
    return len("".join(password.split())) >= minimum


__all__ = ["AccountError", "TooManyAttemptsError"]


class AccountError(ValueError):
    """Sign-up or login was refused; the message is safe to show to the person, and
    `template` and `params` let the page say it in their language."""

    def __init__(self, template: str, **params: object) -> None:
        self.template, self.params = template, params
        super().__init__(template % params if params else template)


class EmailTakenError(AccountError):
    """The email has an account (operators' commands only: pages never say so)."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def normalize_email(email: str) -> str:
    """One plain address (an addr-spec, as email-validator reads it), lower-cased: never a
    list ("a@x, victim@corp" would copy every receipt), a display name (text of a
    stranger's in To:) or a line break (a header of its own). AccountError otherwise."""
    try:
        valid = validate_email(email.strip(), check_deliverability=False)
    except EmailNotValidError:
        raise AccountError(N_("Enter a valid email address.")) from None
    normalized = valid.normalized.lower()
    if len(normalized) > 254:
        raise AccountError(N_("Enter a valid email address."))
    return normalized


def sign_up(
    email: str, password: str, wallet_currencies: Sequence[str], locale: str = "en"
) -> Customer | None:
    """Create the account unless the email is taken: the new customer, or None (the
    taken account is left as it was; its owner logs in with their own password).

    Raises AccountError for an invalid email or a short password. Commits.
    """
    with suppress(EmailTakenError):
        return create_customer(email, password, wallet_currencies, locale)
    return None


def create_customer(
    email: str, password: str, wallet_currencies: Sequence[str], locale: str = "en"
) -> Customer:
    """Create a customer with an empty wallet per currency. Commits.

    Raises AccountError when the email is invalid or taken, or the password too short.
    """
    email = normalize_email(email)
    if not is_password_long_enough(password):
        raise AccountError(
            N_("Use a password of at least %(min)s characters besides spaces."),
            min=MIN_PASSWORD_LENGTH,
        )
    customer = Customer(email=email, password_hash=generate_password_hash(password), locale=locale)
    db.session.add(customer)
    try:
        db.session.flush()
    except IntegrityError:
        # The email was taken (UNIQUE), so the insert failed: report it, write nothing.
        db.session.rollback()
        raise EmailTakenError(N_("An account with this email already exists.")) from None
    for currency in wallet_currencies:
        db.session.add(Wallet(customer_id=customer.id, currency=currency, balance_minor=0))
    queue_email(EmailKind.WELCOME, customer.id, customer_id=customer.id)
    db.session.commit()
    return customer


def authenticate(email: str, password: str, address: str) -> Customer | None:
    """The customer whose email and password match, or None (unknown email or wrong
    password alike, in the same time). Raises TooManyAttemptsError."""
    return login_throttle.sign_in(
        "customer",
        email,
        password,
        address,
        lambda normalized: db.session.scalar(select(Customer).where(Customer.email == normalized)),
    )


def end_sessions(customer: Customer) -> None:
    """Log the customer out everywhere: every session and remember-me cookie issued so
    far names the old session version and stops working. Commits."""
    customer.session_version += 1
    db.session.commit()


def issue_api_token(customer: Customer) -> str:
    """Replace the customer's API token and return the new one (shown once). Commits."""
    token = "tok_" + secrets.token_urlsafe(32)
    customer.api_token_hash = hash_token(token)
    db.session.commit()
    return token


def customer_for_token(token: str) -> Customer | None:
    return db.session.scalar(select(Customer).where(Customer.api_token_hash == hash_token(token)))


def load_session_user(session_id: str) -> Customer | None:
    """Flask-Login's user loader: only ids 'customer:<n>:<session version>' of the
    customer's current session version are customers."""
    signed_in = session_customer(session_id)
    if signed_in is None:
        return None
    customer = db.session.get(Customer, signed_in[0])
    if customer is None or customer.session_version != signed_in[1]:
        return None
    return customer


def session_customer(session_id: object) -> tuple[int, int] | None:
    """(customer id, session version) named by a session's user id, unchecked; None
    for anything that is not 'customer:<id>:<version>'."""
    if not isinstance(session_id, str):
        return None
    kind, _, rest = session_id.partition(":")
    raw_id, _, raw_version = rest.partition(":")
    customer_id = parse_row_id(raw_id)
    is_version = raw_version.isascii() and raw_version.isdigit() and len(raw_version) <= 9
    if kind != "customer" or customer_id is None or not is_version:
        return None
    return customer_id, int(raw_version)


def remember_locale(customer: Customer, locale: str) -> None:
    """The language this customer's emails are written in from now on. Commits."""
    if customer.locale != locale:
        customer.locale = locale
        db.session.commit()
