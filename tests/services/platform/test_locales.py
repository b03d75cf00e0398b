"""The shop's languages: every message of the customer's pages, emails and amount
refusals is translated into Italian, the compiled catalog is the one of the .po, and
money and times read as each locale writes them."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from babel.messages.mofile import read_mo
from babel.messages.pofile import read_po
from flask import Flask

from models.money import InvalidAmountError, parse
from services.platform.locales import SUPPORTED_LOCALES, amount_message, datetime_text, money_text

ROOT = Path(__file__).resolve().parents[3]
CATALOG = ROOT / "translations" / "it" / "LC_MESSAGES"


def test_every_message_is_translated_and_the_catalog_is_compiled(tmp_path: Path) -> None:
    pot = tmp_path / "messages.pot"
    subprocess.run(
        [sys.executable, "-m", "babel.messages.frontend", "extract", "-F", "babel.cfg",
         "-k", "N_", "-k", "_", "--no-location", "--omit-header", "-o", str(pot), "."],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )  # fmt: skip
    with pot.open("rb") as template:
        wanted = {m.id for m in read_po(template) if m.id}
    with (CATALOG / "messages.po").open("rb") as po:
        italian = read_po(po, locale="it")
    translated = {m.id: m.string for m in italian if m.id}
    assert sorted(wanted - {k for k, v in translated.items() if v}) == []  # all translated
    with (CATALOG / "messages.mo").open("rb") as mo:
        compiled = {m.id: m.string for m in read_mo(mo) if m.id}
    assert compiled == translated, "run: pybabel compile -d translations -D messages"
    assert SUPPORTED_LOCALES == ("en", "it")


def test_amounts_and_times_read_in_each_locale(app_ctx: Flask) -> None:
    assert money_text(123456, "EUR", "it") == "1.234,56\xa0€"
    assert money_text(123456, "EUR", "en") == "€1,234.56"
    moment = datetime(2026, 12, 1, 18, 5, tzinfo=UTC)
    assert datetime_text(moment, "it").startswith("1 dic 2026")
    assert datetime_text(moment, "en").startswith("Dec 1, 2026")
    assert datetime_text(moment, "en").endswith(" UTC")  # the zone, said


def test_a_refused_amount_is_explained_in_the_readers_language(app: Flask) -> None:
    try:
        parse("12.50", "EUR", "it")
    except InvalidAmountError as exc:
        refused = exc
    with app.test_request_context(headers={"Accept-Language": "it"}):
        said = amount_message(refused)
    assert (
        said == "«12.50» non è un importo valido: intendevi 12,50\xa0€? Scrivi ad esempio 1.234,50."
    )
    with app.test_request_context():
        # An English reader: English words, the amount meant as English writes it.
        assert amount_message(refused).startswith(
            "'12.50' is not an amount here: did you mean €12.50?"
        )
