"""Money rules: integer minor units plus an ISO 4217 currency code."""

from __future__ import annotations

import re

# Minor-unit exponent of the ISO 4217 currencies the system may be configured
# to accept (CURRENCIES); an unknown code is refused even if configured.
CURRENCY_EXPONENTS: dict[str, int] = {
    "EUR": 2, "USD": 2, "GBP": 2, "CHF": 2, "SEK": 2, "NOK": 2, "DKK": 2,
    "PLN": 2, "CZK": 2, "CAD": 2, "AUD": 2, "JPY": 0,
}  # fmt: skip


class InvalidAmountError(ValueError):
    """An amount or currency was refused; the message names the field and the rule."""


def validate_money(
    amount_minor: object, currency: object, *, max_minor: int, allowed: list[str]
) -> tuple[int, str]:
    """Return (amount_minor, currency) if positive, at most `max_minor`, in a known currency."""
    if isinstance(amount_minor, bool) or not isinstance(amount_minor, int):
        raise InvalidAmountError("amount_minor must be an integer number of minor units")
    if amount_minor <= 0:
        raise InvalidAmountError("amount_minor must be positive")
    if amount_minor > max_minor:
        raise InvalidAmountError(f"amount_minor must be at most {max_minor}")
    if not isinstance(currency, str) or currency.upper() not in CURRENCY_EXPONENTS:
        raise InvalidAmountError("currency must be a known ISO 4217 code")
    code = currency.upper()
    if code not in allowed:
        raise InvalidAmountError(f"currency must be one of {', '.join(allowed)}")
    return amount_minor, code


def format_money(amount_minor: int, currency: str) -> str:
    """Render minor units for people, e.g. 1250 EUR -> '12.50 EUR'. Templates only."""
    exponent = CURRENCY_EXPONENTS.get(currency, 2)
    sign = "-" if amount_minor < 0 else ""
    whole, frac = divmod(abs(amount_minor), 10**exponent)
    body = f"{whole:,}" if exponent == 0 else f"{whole:,}.{frac:0{exponent}d}"
    return f"{sign}{body} {currency}"


# What a person may type as an amount: digits, an optional decimal part (commas as
# thousands separators are dropped first). 15 digits before the point exceed any
# configured maximum already; the rest is refused by shape, with no arithmetic.
AMOUNT_RE = re.compile(r"([0-9]{0,15})(?:\.([0-9]{0,15}))?")
MAX_AMOUNT_TEXT = 40  # characters, separators included


def parse_major_amount(text: str, currency: str) -> int:
    """Parse what a person types ("12.5", "12.50", "1,250.00") into minor units.

    Raises InvalidAmountError for anything that is not a plain positive amount
    with at most the currency's number of decimals.
    """
    exponent = CURRENCY_EXPONENTS.get(currency.upper())
    if exponent is None:
        raise InvalidAmountError("currency must be a known ISO 4217 code")
    # Shape first, on a bounded string, before any arithmetic: Decimal("1e999990") is
    # cheap to build but turning it into an int took half a minute of CPU.
    cleaned = text.strip()[: MAX_AMOUNT_TEXT + 1].replace(",", "")
    match = AMOUNT_RE.fullmatch(cleaned)
    if len(cleaned) > MAX_AMOUNT_TEXT or match is None or cleaned in ("", "."):
        raise InvalidAmountError("enter an amount such as 25 or 25.50")
    whole, fraction = match.group(1), (match.group(2) or "").rstrip("0")
    if len(fraction) > exponent:
        raise InvalidAmountError(f"use at most {exponent} decimals for {currency.upper()}")
    minor = int(whole or "0") * 10**exponent + int(fraction.ljust(exponent, "0") or "0")
    if minor <= 0:
        raise InvalidAmountError("the amount must be positive")
    return minor
