"""Wallet pages: balances and history, top-ups through the provider, paying orders from it."""

from __future__ import annotations

import uuid

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_login import current_user, login_required

from extensions import db
from models import Wallet, money
from models.money import InvalidAmountError, Money, reviewed_minor, validate_money
from models.types import parse_uuid
from services.payments.cards import card_entry
from services.payments.checkout import parse_idempotency_key, start_topup_payment
from services.payments.routing import check_minimum
from services.payments.wallet_orders import pay_order_from_wallet
from services.platform.errors import ClientError, form_message
from services.platform.locales import amount_message, current_locale, money_text
from services.wallet.ledger import wallet_of
from services.wallet.reads import ledger_page, wallets_of
from settings import settings

bp = Blueprint("wallet", __name__, url_prefix="/wallet")
PAGE_SIZE = 20


def _wallets() -> list[Wallet]:
    return wallets_of(current_user.id)


@bp.get("")
@login_required
def overview() -> ResponseReturnValue:
    wallets = _wallets()
    if not wallets:
        return render_template(
            "wallet/overview.html", wallets=[], selected=None, entries=[], page=1, pages=1
        )
    currency = request.args.get("currency", wallets[0].currency).upper()
    selected = next((w for w in wallets if w.currency == currency), wallets[0])
    history = ledger_page(selected.id, request.args.get("page", 1, type=int), PAGE_SIZE)
    return render_template(
        "wallet/overview.html",
        wallets=wallets,
        selected=selected,
        entries=history.entries,
        page=history.page,
        pages=history.pages,
    )


@bp.route("/topup", methods=["GET", "POST"])
@login_required
def topup() -> ResponseReturnValue:
    currencies = settings().money.currencies
    currency = str(request.values.get("currency") or "").upper()
    if currency not in currencies:  # anything else shows the form in the first currency
        currency = currencies[0]
    if request.method == "GET":
        return _topup_form(currency)
    reviewed = request.form.get("amount_minor")
    try:
        target = wallet_of(current_user, currency)
        if reviewed is None:
            # What the customer typed, read in their language and shown back: no money
            # moves on a typed amount before they have seen what it was read as.
            amount = money.parse(request.form.get("amount", ""), currency, current_locale())
            validate_money(
                amount.amount_minor,
                currency,
                max_minor=settings().money.max_amount_minor,
                allowed=[target.currency],
            )
            check_minimum(amount.amount_minor, currency)
            return _topup_review(amount)
        amount_minor = reviewed_minor(reviewed)
        key = parse_idempotency_key(request.form.get("idempotency_key"))
        card = request.form.get("payment_method")
        payment, _ = start_topup_payment(
            current_user,
            target,
            amount_minor,
            key,
            card,
            request.remote_addr,
            request.form.get("provider"),
        )
    except (ClientError, InvalidAmountError) as exc:
        # The form again, with the reason: a 4xx, and nothing was written.
        db.session.rollback()
        flash(form_message(exc) if isinstance(exc, ClientError) else amount_message(exc), "error")
        status = exc.status if isinstance(exc, ClientError) else 400
        headers = exc.headers() if isinstance(exc, ClientError) else {}
        return _topup_form(currency), status, headers
    return redirect(url_for("checkout.payment_status", payment_id=payment.id), code=303)


def _topup_form(currency: str) -> str:
    return render_template(
        "wallet/topup.html",
        currency=currency,
        currencies=[w.currency for w in _wallets()],
        max_amount=money_text(settings().money.max_amount_minor, currency),
        typed=request.form.get("amount", ""),
    )


def _topup_review(amount: Money) -> str:
    """The second step: the amount as read, the card, and one button to pay it."""
    return render_template(
        "wallet/topup_review.html",
        amount=amount,
        idempotency_key=uuid.uuid4(),  # born with the reviewed intent: a double click pays once
        card=card_entry(amount.currency, request.args.get("provider")),
    )


@bp.post("/pay/<id:order_id>")
@login_required
def pay_order(order_id: int) -> ResponseReturnValue:
    operation_id = request.form.get("operation_id", "")
    try:
        parse_uuid(operation_id)
    except ValueError:
        flash(_("This form is out of date; please try again."), "error")
        return redirect(url_for("checkout.checkout", order_id=order_id), code=303)
    try:
        pay_order_from_wallet(current_user, order_id, operation_id)
    except ClientError as exc:
        if exc.status == 404:
            abort(404)
        flash(form_message(exc), "error")
        return redirect(url_for("checkout.checkout", order_id=order_id), code=303)
    flash(_("Order #%(id)s is paid from your wallet.", id=order_id), "ok")
    return redirect(url_for("checkout.order", order_id=order_id), code=303)
