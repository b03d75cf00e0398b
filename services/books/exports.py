"""The journal of a period for an accountant, in one file whatever the providers: CSV
(a row per posting, debit and credit as decimal amounts) or beancount, whose own
`bean-check` proves the file balanced and that every account ends the period where our
trial balance says, to the unit (a `balance` assertion per account and currency at the
period's end, after an opening entry of the balances it began with)."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import date, timedelta

from models.money import Money
from services.books import reports

CSV_HEADER = [
    "date",
    "entry",
    "account",
    "debit",
    "credit",
    "currency",
    "source",
    "provider_id",
]
FORMATS = ("csv", "beancount")
# The chart of accounts in beancount's five kinds (docs/books.md has both names).
BEANCOUNT_ROOTS = {
    "revenue": "Income:Revenue",
    "refunds": "Income:Refunds",  # contra-revenue: a debit balance
    "disputes": "Expenses:Disputes",
    "adjustments": "Equity:Adjustments",
    "wallet": "Liabilities:Wallets",
    "clearing": "Assets:Clearing",
    "bank": "Assets:Bank",
    "fees": "Expenses:Fees",
    "fx": "Equity:Conversions",  # beancount's own name for currency conversions
}


def as_csv(start: date, end: date) -> Iterator[str]:
    """The period's postings as CSV text, a chunk at a time."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_HEADER)
    for n, line in enumerate(reports.lines(start, end), start=1):
        amount = str(Money(abs(line.amount_minor), line.currency).major)
        debit, credit = (amount, "") if line.amount_minor > 0 else ("", amount)
        writer.writerow(
            [
                line.day,
                line.entry_id,
                line.account,
                debit,
                credit,
                line.currency,
                line.source,
                line.provider_id,
            ]
        )
        if n % reports.BATCH == 0:
            yield _taken(out)
    yield _taken(out)


def _taken(out: io.StringIO) -> str:
    text = out.getvalue()
    out.seek(0)
    out.truncate()
    return text


def beancount_account(address: str) -> str:
    """Our account's name in beancount (`clearing:stripe` -> `Assets:Clearing:Stripe`,
    `wallet:7` -> `Liabilities:Wallets:W7`)."""
    root, _, rest = address.partition(":")
    name = BEANCOUNT_ROOTS[root]
    if root == "wallet":
        return f"{name}:W{int(rest)}"
    if rest:
        return f"{name}:{rest.replace('_', '-').capitalize()}"
    return name


def as_beancount(start: date, end: date) -> Iterator[str]:
    """The period as a beancount file: the accounts opened the day before it, an entry of
    the balances it opened with, every entry of the period, and each account's balance
    asserted the day after it (our trial balance at its end)."""
    before = start - timedelta(days=1)
    opening = {k: v for k, v in reports.balances_before(reports.day_start(start)).items() if v}
    closing = reports.balances_before(reports.day_start(end) + timedelta(days=1))
    used = opening.keys() | reports.accounts_between(start, end)
    closing = {key: closing.get(key, 0) for key in used}
    accounts = sorted({account for account, _ in used})
    yield (
        f'option "title" "The books from {start} to {end}"\n'
        f"; Exported by `flask books export`; checked by bean-check (docs/books.md).\n\n"
    )
    yield "".join(f"{before} open {beancount_account(a)}\n" for a in accounts) + "\n"
    if opening:
        legs = [(account, amount, cur) for (account, cur), amount in sorted(opening.items())]
        yield _transaction(before, "Opening balances", {}, legs)
    entry: list[reports.Line] = []
    for line in reports.lines(start, end):
        if entry and entry[0].entry_id != line.entry_id:
            yield _entry(entry)
            entry = []
        entry.append(line)
    if entry:
        yield _entry(entry)
    after = end + timedelta(days=1)
    # `~ 0`: to the unit (beancount's own tolerance lets a balance off by a cent pass).
    yield "".join(
        f"{after} balance {beancount_account(account)} {Money(amount, cur).major} ~ 0 {cur}\n"
        for (account, cur), amount in sorted(closing.items())
    )


def _entry(lines: list[reports.Line]) -> str:
    first = lines[0]
    meta = {"entry": str(first.entry_id)}
    if first.provider_id:
        meta["provider_id"] = first.provider_id
    legs = [(line.account, line.amount_minor, line.currency) for line in lines]
    return _transaction(first.day, first.source, meta, legs)


def _transaction(
    day: date, narration: str, meta: dict[str, str], legs: Iterable[tuple[str, int, str]]
) -> str:
    text = f'{day} * "{_quoted(narration)}"\n'
    text += "".join(f'  {key}: "{_quoted(value)}"\n' for key, value in meta.items())
    merged: dict[tuple[str, str], int] = defaultdict(int)
    for account, amount, currency in legs:
        merged[(account, currency)] += amount
    for (account, currency), amount in merged.items():
        if amount:
            text += f"  {beancount_account(account)}  {Money(amount, currency).major} {currency}\n"
    return text + "\n"


def _quoted(text: str) -> str:
    return text.replace("\\", "/").replace('"', "'").replace("\n", " ")
