"""`flask payments refund PAYMENT_ID` and `flask payments refund-wallet-order ORDER_ID`."""

from __future__ import annotations

import json
import uuid

import click
from flask.cli import AppGroup

from extensions import db
from models import Refund
from services.errors import ClientError
from services.refunds import refund_payment, refund_wallet_order

payments_cli = AppGroup("payments", help="Refunds.")
ACTOR = "cli"


def _print(refund: Refund, is_new: bool) -> None:
    click.echo(
        json.dumps(
            {
                "id": refund.id,
                "status": refund.status.value,
                "payment_id": refund.payment_id,
                "order_id": refund.order_id,
                "amount_minor": refund.amount_minor,
                "currency": refund.currency,
                "is_new": is_new,
            }
        )
    )


@payments_cli.command("refund")
@click.argument("payment_id", type=int)
@click.option("--amount-minor", type=int, default=None, help="Default: all that is left.")
@click.option("--reason", required=True, help="Why (at least 5 characters; recorded).")
@click.option("--key", type=click.UUID, default=None, help="Idempotency key (default: new).")
def refund_command(
    payment_id: int, amount_minor: int | None, reason: str, key: uuid.UUID | None
) -> None:
    """Refund a charged payment through its provider; print the refund as JSON. The
    provider is asked by a job: the status printed is where the refund starts."""
    try:
        refund, is_new = refund_payment(
            payment_id, amount_minor, reason, ACTOR, key or uuid.uuid4()
        )
    except ClientError as exc:
        db.session.rollback()
        raise click.ClickException(f"{exc.code}: {exc}") from None
    _print(refund, is_new)


@payments_cli.command("refund-wallet-order")
@click.argument("order_id", type=int)
@click.option("--amount-minor", type=int, default=None, help="Default: all that is left.")
@click.option("--reason", required=True, help="Why (at least 5 characters; recorded).")
@click.option("--key", type=click.UUID, default=None, help="Idempotency key (default: new).")
def refund_wallet_order_command(
    order_id: int, amount_minor: int | None, reason: str, key: uuid.UUID | None
) -> None:
    """Refund an order paid from the wallet, to the wallet; print the refund as JSON."""
    try:
        refund, is_new = refund_wallet_order(
            order_id, amount_minor, reason, ACTOR, key or uuid.uuid4()
        )
    except ClientError as exc:
        db.session.rollback()
        raise click.ClickException(f"{exc.code}: {exc}") from None
    _print(refund, is_new)
