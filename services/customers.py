"""Customer accounts: sign-up, password login and API tokens."""

from __future__ import annotations

import hashlib
import secrets

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from werkzeug.security import check_password_hash, generate_password_hash

from extensions import db
from models import Customer, Wallet

MIN_PASSWORD_LENGTH = 8


class AccountError(ValueError):
    """Sign-up or login was refused; the message is safe to show to the person."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def normalize_email(email: str) -> str:
    email = email.strip().lower()
    if "@" not in email or len(email) > 254 or email.startswith("@") or email.endswith("@"):
        raise AccountError("Enter a valid email address.")
    return email


def create_customer(email: str, password: str, wallet_currencies: list[str]) -> Customer:
    """Create a customer with an empty wallet per currency. Commits.

    Raises AccountError when the email is invalid or taken, or the password too short.
    """
    email = normalize_email(email)
    if len(password) < MIN_PASSWORD_LENGTH:
        raise AccountError(f"Use a password of at least {MIN_PASSWORD_LENGTH} characters.")
    customer = Customer(email=email, password_hash=generate_password_hash(password))
    db.session.add(customer)
    try:
        db.session.flush()
    except IntegrityError:
        # The email was taken (UNIQUE), so the insert failed: report it, write nothing.
        db.session.rollback()
        raise AccountError("An account with this email already exists.") from None
    for currency in wallet_currencies:
        db.session.add(Wallet(customer_id=customer.id, currency=currency, balance_minor=0))
    db.session.commit()
    return customer


def authenticate(email: str, password: str) -> Customer | None:
    """The customer whose email and password match, or None."""
    customer = db.session.scalar(select(Customer).where(Customer.email == email.strip().lower()))
    if customer is None or not check_password_hash(customer.password_hash, password):
        return None
    return customer


def issue_api_token(customer: Customer) -> str:
    """Replace the customer's API token and return the new one (shown once). Commits."""
    token = "tok_" + secrets.token_urlsafe(32)
    customer.api_token_hash = hash_token(token)
    db.session.commit()
    return token


def customer_for_token(token: str) -> Customer | None:
    return db.session.scalar(select(Customer).where(Customer.api_token_hash == hash_token(token)))


def load_session_user(session_id: str) -> Customer | None:
    """Flask-Login's user loader: only ids of the form 'customer:<n>' are customers."""
    kind, _, raw_id = session_id.partition(":")
    if kind != "customer" or not raw_id.isdigit():
        return None
    return db.session.get(Customer, int(raw_id))
