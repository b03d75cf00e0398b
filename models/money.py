"""Money: integer minor units plus an ISO 4217 currency, and its only two doors to and
from people: `parse(text, currency, locale)` and `format(money, locale)` (Babel's, with
the currency's own exponent). Nothing else turns text into money or money into text."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from babel import Locale
from babel.numbers import (
    NumberFormatError,
    format_currency,
    format_decimal,
    get_currency_precision,
    get_currency_symbol,
    get_decimal_symbol,
    get_group_symbol,
    parse_decimal,
)

# The ISO 4217 currencies the system may be configured to accept (CURRENCIES); an
# unknown code is refused even if configured. Their exponents come from Babel (CLDR).
KNOWN_CURRENCIES = frozenset(
    {"EUR", "USD", "GBP", "CHF", "SEK", "NOK", "DKK", "PLN", "CZK", "CAD", "AUD", "JPY"}
)
DEFAULT_LOCALE = "en"
# Longest text taken as an amount, separators included: anything longer is refused by
# its length before any arithmetic (a Decimal of a million digits costs real CPU).
MAX_AMOUNT_TEXT = 40
EXAMPLE_AMOUNT = Decimal("1234.50")  # shown in the locale's own form when a text is refused


def N_(message: str) -> str:
    """Marks a message for translation (pybabel's keyword); services/platform/locales.py
    translates it."""
    return message


class InvalidAmountError(ValueError):
    """An amount or currency was refused; the message says how to type it. `template`
    and `params` let the message be said in the reader's language; `in_locale` is where
    its own text formats any Money among them (the rest arrive formatted)."""

    def __init__(self, template: str, *, in_locale: str = DEFAULT_LOCALE, **params: object) -> None:
        self.template, self.params = template, params
        super().__init__(self.say(in_locale, lambda message: message))

    def say(self, locale: str, translate: Callable[[str], str]) -> str:
        """The message in `locale`: translated, and its amounts formatted there."""
        values = {
            name: format(value, locale) if isinstance(value, Money) else value
            for name, value in self.params.items()
        }
        text = translate(self.template)
        return text % values if values else text


def exponent_of(currency: str) -> int:
    """Digits after the decimal point of a known currency (EUR 2, JPY 0)."""
    code = currency.upper()
    if code not in KNOWN_CURRENCIES:
        raise InvalidAmountError(N_("currency must be a known ISO 4217 code"))
    return int(get_currency_precision(code))


@dataclass(frozen=True)
class Money:
    """An amount of one currency in its minor units (cents): 1250 EUR is 12,50 €."""

    amount_minor: int
    currency: str

    def __post_init__(self) -> None:
        exponent_of(self.currency)  # refuses an unknown code
        if self.currency != self.currency.upper():
            object.__setattr__(self, "currency", self.currency.upper())

    @property
    def major(self) -> Decimal:
        return Decimal(self.amount_minor).scaleb(-exponent_of(self.currency))


@functools.lru_cache(maxsize=64)
def _locale(code: str) -> Locale:
    # Parsed once per locale: Babel parses a locale's name on every call given a string,
    # half the cost of formatting an amount (pages show several).
    return Locale.parse(code)


def format(money: Money, locale: str | None = None) -> str:  # shadows the builtin here only
    """Money as a person reads it in `locale`: 12,50 € (it), €12.50 (en), -¥1,234."""
    return str(
        format_currency(money.major, money.currency, locale=_locale(locale or DEFAULT_LOCALE))
    )


MEANT_ANOTHER_AMOUNT = N_(
    "'%(typed)s' is not an amount here: did you mean %(meant)s? Type it like %(example)s."
)


def parse(text: str, currency: str, locale: str | None = None, *, is_hinted: bool = True) -> Money:
    """What a person typed, read strictly in `locale` ("12,50" is 12.50 in it, de and fr;
    "1,234.56" is 1234.56 in en; the currency's own symbol or code may stand before or
    after it, as `format` prints it). Refused with InvalidAmountError, saying how to type it:
    anything but digits and the locale's separators (signs, exponents, spaces, symbols),
    a text that reads differently in the other convention and is not valid here, more
    decimals than the currency has, zero."""
    locale = locale or DEFAULT_LOCALE
    code = currency.upper()
    exponent = exponent_of(code)
    raw = _without_currency(text.strip(), code, locale)
    example = _example(code, locale)
    if not raw or len(raw) > MAX_AMOUNT_TEXT:
        raise InvalidAmountError(N_("Enter an amount, like %(example)s."), example=example)
    allowed = set("0123456789") | {get_decimal_symbol(locale), get_group_symbol(locale)}
    if any(ch not in allowed for ch in raw):
        raise InvalidAmountError(N_("Type digits only, like %(example)s."), example=example)
    try:
        value = parse_decimal(raw, locale=locale, strict=True)
    except NumberFormatError:
        meant = _meant(raw, code, locale) if is_hinted else None
        if meant is not None:
            raise InvalidAmountError(
                MEANT_ANOTHER_AMOUNT,
                in_locale=locale,
                typed=raw,
                meant=meant,
                example=example,
            ) from None
        raise InvalidAmountError(
            N_("'%(typed)s' is not an amount here. Type it like %(example)s."),
            typed=raw,
            example=example,
        ) from None
    if not value.is_finite() or value <= 0:
        raise InvalidAmountError(
            N_("The amount must be more than zero, like %(example)s."), example=example
        )
    minor = value.scaleb(exponent)
    if minor != minor.to_integral_value():
        if not exponent:
            raise InvalidAmountError(
                N_("%(currency)s has no decimals: type whole amounts, like %(example)s."),
                currency=code,
                example=example,
            )
        raise InvalidAmountError(
            N_("%(currency)s has %(decimals)s decimals at most: type it like %(example)s."),
            currency=code,
            decimals=exponent,
            example=example,
        )
    return Money(int(minor), code)


SPACES = " \xa0\u202f"  # what Babel puts between an amount and its currency


def _without_currency(raw: str, currency: str, locale: str) -> str:
    """The amount without this currency's own symbol or code before or after it, so what
    `format` prints is read back (parse(format(m)) == m); any other symbol stays, refused."""
    for affix in (str(get_currency_symbol(currency, locale=locale)), currency):
        if raw.startswith(affix):
            return raw[len(affix) :].lstrip(SPACES)
        if raw.endswith(affix):
            return raw[: -len(affix)].rstrip(SPACES)
    return raw


def _example(currency: str, locale: str) -> str:
    exponent = exponent_of(currency)
    pattern = "#,##0" + ("." + "0" * exponent if exponent else "")
    return str(format_decimal(EXAMPLE_AMOUNT, format=pattern, locale=locale))


# A locale of the other convention, by the reader's decimal symbol: what was typed is
# read in it by `parse` itself (never by Babel's suggestions, which move separators
# without knowing the currency: "0,5" came back as 5.00 and "1.250,00" as 1.25).
OTHER_CONVENTION = {",": "en", ".": "de"}


def _meant(raw: str, currency: str, locale: str) -> Money | None:
    """The amount `raw` is in the other convention (12,50 typed by an English reader is
    12.50), where it is money there; None otherwise."""
    other = OTHER_CONVENTION.get(get_decimal_symbol(locale))
    if other is None:
        return None
    try:
        return parse(raw, currency, other, is_hinted=False)
    except InvalidAmountError:
        return None


def reviewed_minor(raw: object) -> int:
    """The amount a review page showed and posted back (integer minor units, from our
    own hidden field): digits only, at most 15; InvalidAmountError for anything else."""
    if not isinstance(raw, str) or not raw.isascii() or not raw.isdigit() or len(raw) > 15:
        raise InvalidAmountError(N_("This form is out of date; enter the amount again."))
    return int(raw)


def validate_money(
    amount_minor: object, currency: object, *, max_minor: int, allowed: Sequence[str]
) -> tuple[int, str]:
    """(amount_minor, currency) of an API request if positive, at most `max_minor`, in a
    known and allowed currency; messages name the field and major units."""
    if isinstance(amount_minor, bool) or not isinstance(amount_minor, int):
        raise InvalidAmountError(N_("amount_minor must be an integer number of minor units"))
    if amount_minor <= 0:
        raise InvalidAmountError(N_("amount_minor must be positive"))
    if not isinstance(currency, str) or currency.upper() not in KNOWN_CURRENCIES:
        raise InvalidAmountError(N_("currency must be a known ISO 4217 code"))
    code = currency.upper()
    if code not in allowed:
        raise InvalidAmountError(
            N_("currency must be one of %(allowed)s"), allowed=", ".join(allowed)
        )
    if amount_minor > max_minor:
        raise InvalidAmountError(
            N_("The amount must be at most %(max)s."),
            max=Money(max_minor, code),
        )
    return amount_minor, code


__all__ = [
    "KNOWN_CURRENCIES",
    "InvalidAmountError",
    "Money",
    "exponent_of",
    "format",
    "parse",
    "reviewed_minor",
    "validate_money",
]
