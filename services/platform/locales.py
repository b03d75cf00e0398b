"""The customer's language: which locales the shop speaks, the one of this request
(Flask-Babel's choice, see blueprints/language.py), and money as that locale reads it."""

from __future__ import annotations

from datetime import UTC, datetime

from babel.dates import format_datetime
from flask import has_app_context
from flask_babel import get_locale, gettext

from models.money import DEFAULT_LOCALE, InvalidAmountError, Money, format

SUPPORTED_LOCALES = ("en", "it")  # every customer page, email and message, in both
LANGUAGE_NAMES = {"en": "English", "it": "Italiano"}  # each in its own language


def current_locale() -> str:
    """This request's locale (or the one an email forces); the default outside an app."""
    if not has_app_context():
        return DEFAULT_LOCALE
    locale = get_locale()
    return str(locale) if locale is not None else DEFAULT_LOCALE


def datetime_text(moment: datetime, locale: str | None = None) -> str:
    """A time as a person reads it in `locale` or this request's, in UTC, to the second,
    the zone said ("Dec 5, 2026, 10:44:58 PM UTC")."""
    shown = format_datetime(moment, format="medium", tzinfo=UTC, locale=locale or current_locale())
    return f"{shown} UTC"


def money_text(amount_minor: int, currency: str, locale: str | None = None) -> str:
    """An amount as a person reads it, in `locale` or this request's."""
    return format(Money(amount_minor, currency), locale or current_locale())


def amount_message(refused: InvalidAmountError) -> str:
    """Why an amount was refused, in this request's language, amounts formatted there."""
    return refused.say(current_locale(), gettext)
