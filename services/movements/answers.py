"""The one check of a provider's answer against the movement we asked for, for every
kind: amount, currency, our reference and the provider's id. A success must state
amount and currency and name the row (our id or key, or the provider id we already
hold): what it does not say cannot be checked, so it counts as a mismatch. A failure is
checked on what it says. A mismatch never moves money (the caller sends the row to
review and counts it: lifecycle.count_mismatch)."""

from __future__ import annotations

from typing import Any

from models.money import KNOWN_CURRENCIES
from providers.outcomes import Report
from services.platform.locales import money_text


def mismatch(
    noun: str,
    row: Any,
    held_id: str | None,
    theirs_id: str | None,
    report: Report,
    *,
    is_success: bool,
) -> str | None:
    """What in the report contradicts `row` (a payment or refund: id, idempotency_key,
    amount_minor, currency), or None. `held_id`: the provider's id of it we hold;
    `theirs_id`: the one the answer names."""
    problems = []
    if held_id and theirs_id and theirs_id != held_id:
        problems.append(f"provider {noun} {theirs_id!r}, ours is {held_id!r}")
    problems += _money(row, report, is_success)
    problems += _names(noun, row, held_id, theirs_id, report, is_success)
    return "; ".join(problems) or None


def _money(row: Any, report: Report, is_success: bool) -> list[str]:
    """The amounts and currency the report states against the row's (a success must
    state the amount and currency)."""
    problems = []
    currency = row.currency
    shown = report.currency if report.currency in KNOWN_CURRENCIES else currency
    ours = money_text(row.amount_minor, currency)
    if report.amount_minor is None and is_success:
        problems.append("no amount")
    for label, said in (
        ("amount", report.amount_minor),
        ("amount received", report.received_minor),
    ):
        if said is not None and said != row.amount_minor:
            problems.append(f"{label} {money_text(said, shown)}, ours is {ours}")
    if report.currency is None and is_success:
        problems.append("no currency")
    elif report.currency is not None and report.currency != currency.upper():
        problems.append(f"currency {report.currency!r}, ours is {currency!r}")
    return problems


def _names(
    noun: str,
    row: Any,
    held_id: str | None,
    theirs_id: str | None,
    report: Report,
    is_success: bool,
) -> list[str]:
    """Our id or key the report names against the row's (a success must name the row:
    by one of them, or by the provider id we hold)."""
    problems = []
    if report.our_id is not None and report.our_id != str(row.id):
        problems.append(f"{noun}_id {report.our_id[:40]!r}, ours is '{row.id}'")
    if report.reference is not None and report.reference != str(row.idempotency_key):
        problems.append(f"reference {report.reference[:40]!r}, ours is '{row.idempotency_key}'")
    is_known_id = bool(held_id) and theirs_id == held_id
    if is_success and report.our_id is None and report.reference is None and not is_known_id:
        problems.append(f"nothing in it names this {noun} (no reference of ours, new id)")
    return problems
