"""`flask payments refund PAYMENT_ID` and `flask payments refund-wallet-order ORDER_ID`."""

from __future__ import annotations

import json
import uuid

import click
from flask.cli import AppGroup

from extensions import db
from models import Refund, money
from models.money import InvalidAmountError
from models.types import MAX_ROW_ID
from services.platform.errors import ClientError
from services.platform.locales import money_text
from services.refunds.issue import refund_payment, refund_wallet_order
from services.refunds.reads import currency_of

payments_cli = AppGroup("payments", help="Refunds.")
ACTOR = "cli"


AMOUNT_HELP = (
    "What to refund, as a person types it in --locale (12.50 in en, 12,50 in it). "
    "Default: all that is left."
)
LOCALE_HELP = "How --amount is written (a Babel locale: en, it, de, ...)."


def _print(refund: Refund, is_new: bool) -> None:
    """The refund as JSON (integer minor units, like the API), the amount also as read."""
    click.echo(
        json.dumps(
            {
                "id": refund.id,
                "status": refund.status.value,
                "payment_id": refund.payment_id,
                "order_id": refund.order_id,
                "amount_minor": refund.amount_minor,
                "currency": refund.currency,
                "amount": money_text(refund.amount_minor, refund.currency),
                "is_new": is_new,
            },
            ensure_ascii=False,
        )
    )


def _amount(typed: str | None, currency: str | None, locale: str) -> int | None:
    """--amount through money.parse (the one door from text to money)."""
    if typed is None:
        return None
    if currency is None:
        raise click.ClickException("nothing to refund there")
    try:
        return money.parse(typed, currency, locale).amount_minor
    except InvalidAmountError as exc:
        raise click.BadParameter(str(exc), param_hint="--amount") from None


ROW_ID = click.IntRange(1, MAX_ROW_ID)  # larger is no row of ours (and no traceback)


@payments_cli.command("refund")
@click.argument("payment_id", type=ROW_ID)
@click.option("--amount", default=None, help=AMOUNT_HELP)
@click.option("--locale", default="en", show_default=True, help=LOCALE_HELP)
@click.option("--reason", required=True, help="Why (at least 5 characters; recorded).")
@click.option("--key", type=click.UUID, default=None, help="Idempotency key (default: new).")
def refund_command(
    payment_id: int, amount: str | None, locale: str, reason: str, key: uuid.UUID | None
) -> None:
    """Refund a charged payment through its provider; print the refund as JSON. The
    provider is asked by a job: the status printed is where the refund starts."""
    amount_minor = _amount(amount, currency_of(payment_id=payment_id), locale)
    try:
        refund, is_new = refund_payment(
            payment_id, amount_minor, reason, ACTOR, key or uuid.uuid4()
        )
    except ClientError as exc:
        db.session.rollback()
        raise click.ClickException(f"{exc.code}: {exc}") from None
    _print(refund, is_new)


@payments_cli.command("refund-wallet-order")
@click.argument("order_id", type=ROW_ID)
@click.option("--amount", default=None, help=AMOUNT_HELP)
@click.option("--locale", default="en", show_default=True, help=LOCALE_HELP)
@click.option("--reason", required=True, help="Why (at least 5 characters; recorded).")
@click.option("--key", type=click.UUID, default=None, help="Idempotency key (default: new).")
def refund_wallet_order_command(
    order_id: int, amount: str | None, locale: str, reason: str, key: uuid.UUID | None
) -> None:
    """Refund an order paid from the wallet, to the wallet; print the refund as JSON."""
    amount_minor = _amount(amount, currency_of(order_id=order_id), locale)
    try:
        refund, is_new = refund_wallet_order(
            order_id, amount_minor, reason, ACTOR, key or uuid.uuid4()
        )
    except ClientError as exc:
        db.session.rollback()
        raise click.ClickException(f"{exc.code}: {exc}") from None
    _print(refund, is_new)
