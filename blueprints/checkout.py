"""Cart, order, checkout, pay and payment status pages (server-rendered; the only script
is the provider's card entry, services/payments/cards.py)."""

from __future__ import annotations

import uuid

from flask import (
    Blueprint,
    abort,
    flash,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask.typing import ResponseReturnValue
from flask_babel import gettext as _
from flask_login import current_user, login_required

from extensions import db
from models import Order, OrderStatus
from models.types import parse_uuid, utcnow
from services.accounts.customers import session_customer
from services.catalog.products import active_product, products_by_sku
from services.payments.authentication import request_check
from services.payments.cards import card_entry
from services.payments.checkout import (
    existing_active_payment,
    owned_order,
    owned_payment,
    parse_idempotency_key,
    recent_orders,
    start_order_payment,
)
from services.payments.intake import NewPayment, pay_order_by_session
from services.payments.ordering import MAX_QUANTITY, create_order
from services.payments.orders import order_page
from services.payments.reads import refunds_of
from services.payments.waiting import provider_pause
from services.platform.errors import ClientError, NotFoundError, form_message
from services.refunds import requests as refund_requests
from services.wallet.reads import wallet_in
from settings import settings

bp = Blueprint("checkout", __name__)

STATUS_REFRESH_S = 2  # the status page reloads itself this often until the payment is final


def _cart() -> dict[str, int]:
    cart = session.get("cart")
    return cart if isinstance(cart, dict) else {}


@bp.post("/cart/add")
def add_to_cart() -> ResponseReturnValue:
    sku = request.form.get("sku", "")
    try:
        quantity = int(request.form.get("quantity", "1"))
    except ValueError:
        quantity = 0
    product = active_product(sku)
    if product is None or not 1 <= quantity <= MAX_QUANTITY:
        flash(
            _("Choose a product from the catalog and 1 to %(most)s pieces.", most=MAX_QUANTITY),
            "error",
        )
        return redirect(url_for("shop.catalog"))
    cart = _cart()
    cart[sku] = min(cart.get(sku, 0) + quantity, MAX_QUANTITY)
    session["cart"] = cart
    flash(_("Added %(name)s.", name=product.name), "ok")
    return redirect(url_for("checkout.cart"))


@bp.get("/cart")
def cart() -> ResponseReturnValue:
    quantities = _cart()
    products = products_by_sku(quantities)
    lines = [(p, quantities[p.sku]) for p in products]
    total = sum(p.price_minor * qty for p, qty in lines)
    currency = products[0].currency if products else "EUR"
    return render_template("checkout/cart.html", lines=lines, total=total, currency=currency)


@bp.post("/cart/clear")
def clear_cart() -> ResponseReturnValue:
    session.pop("cart", None)
    return redirect(url_for("checkout.cart"))


@bp.post("/orders")
@login_required
def place_order() -> ResponseReturnValue:
    try:
        order = create_order(current_user, _cart())
    except ClientError as exc:
        flash(form_message(exc), "error")
        return redirect(url_for("checkout.cart"))
    session.pop("cart", None)
    return redirect(url_for("checkout.checkout", order_id=order.id), code=303)


@bp.get("/orders")
@login_required
def orders() -> ResponseReturnValue:
    return render_template("checkout/orders.html", orders=recent_orders(current_user))


@bp.get("/orders/<id:order_id>")
@login_required
def order(order_id: int) -> ResponseReturnValue:
    try:
        page = order_page(current_user, order_id)
    except NotFoundError:
        abort(404)
    return render_template(
        "checkout/order.html",
        page=page,
        refund_requests=refund_requests.requests_of(order_id),
        why_not_ask=refund_requests.why_not_ask(page.order),
        window_days=settings().payments.refund_request_window_days,
    )


@bp.post("/orders/<id:order_id>/refund-request")
@login_required
def ask_refund(order_id: int) -> ResponseReturnValue:
    """The customer asks for a refund of their order, with a reason; a person decides."""
    try:
        refund_requests.ask(current_user, order_id, request.form.get("reason", ""))
        flash(_("We have your request. The shop will answer you by email."), "success")
    except NotFoundError:
        abort(404)
    except ClientError as exc:
        days = settings().payments.refund_request_window_days
        is_refused = exc.code == "refund_not_askable"
        flash(_(str(exc), days=days) if is_refused else form_message(exc), "error")
    return redirect(url_for("checkout.order", order_id=order_id), code=303)


@bp.get("/orders/<id:order_id>/checkout")
@login_required
def checkout(order_id: int) -> ResponseReturnValue:
    order = _order_or_404(order_id)
    active = existing_active_payment(order)
    if active is not None:
        return redirect(url_for("checkout.payment_status", payment_id=active.id))
    # The payment's idempotency key is born here, with the customer's intent: a double
    # click, a resubmit or this page in two tabs all carry the same key.
    wallet = wallet_in(current_user.id, order.currency)
    return render_template(
        "checkout/checkout.html",
        order=order,
        wallet=wallet,
        card=card_entry(order.currency, request.args.get("provider")),
        idempotency_key=uuid.uuid4(),
        wallet_operation_id=uuid.uuid4(),  # the wallet debit's operation id, born here too
        is_open=order.status == OrderStatus.OPEN,
    )


@bp.post("/orders/<id:order_id>/pay")
def pay(order_id: int) -> ResponseReturnValue:
    new = _lean_payment(order_id)  # the common case in one statement (services/payments/intake.py)
    if new is not None:
        return redirect(url_for("checkout.payment_status", payment_id=new.id), code=303)
    return _pay(order_id)


def _lean_payment(order_id: int) -> NewPayment | None:
    """Flask-Login's session names the customer and session version; the statement
    checks both against the customer row, as the user loader does."""
    signed_in = session_customer(session.get("_user_id"))
    if signed_in is None:
        return None
    try:
        key = parse_uuid(request.form.get("idempotency_key", ""))
    except ValueError:
        return None
    card = request.form.get("payment_method")
    provider = request.form.get("provider")
    return pay_order_by_session(*signed_in, order_id, key, card, request.remote_addr, provider)


@login_required
def _pay(order_id: int) -> ResponseReturnValue:
    """Every other case (repeats, errors, not signed in): the ORM path decides."""
    try:
        key = parse_idempotency_key(request.form.get("idempotency_key"))
        card = request.form.get("payment_method")
        provider = request.form.get("provider")
        payment, _ = start_order_payment(
            current_user, order_id, key, card, request.remote_addr, provider
        )
    except NotFoundError:
        abort(404)
    except ClientError as exc:
        db.session.rollback()
        payment_id = exc.details.get("payment_id")
        if isinstance(payment_id, int):
            return redirect(url_for("checkout.payment_status", payment_id=payment_id), code=303)
        flash(form_message(exc), "error")
        return redirect(url_for("checkout.checkout", order_id=order_id), code=303)
    return redirect(url_for("checkout.payment_status", payment_id=payment.id), code=303)


@bp.get("/payments/<id:payment_id>")
@login_required
def payment_status(payment_id: int) -> ResponseReturnValue:
    try:
        payment = owned_payment(current_user, payment_id)
    except NotFoundError:
        abort(404)
    return render_template(
        "checkout/payment.html",
        payment=payment,
        refunds=refunds_of(payment_id=payment.id),
        refresh_s=None if payment.status.is_final else STATUS_REFRESH_S,
        pause=provider_pause(payment),
        now=utcnow(),
        is_back_from_bank=request.args.get("back") == "bank",
    )


@bp.get("/payments/<id:payment_id>/return")
@login_required
def return_from_bank(payment_id: int) -> ResponseReturnValue:
    """Where the provider sends the customer after 3-D Secure. The query string (Stripe
    adds redirect_status) is not trusted: the provider is asked, and the status page
    shows what it says (or the webhook, whichever comes first)."""
    try:
        payment = owned_payment(current_user, payment_id)
    except NotFoundError:
        abort(404)
    request_check(payment)
    # Back from the bank: the page says it is checking, not "confirm" again.
    return redirect(
        url_for("checkout.payment_status", payment_id=payment.id, back="bank"), code=303
    )


def _order_or_404(order_id: int) -> Order:
    try:
        return owned_order(current_user, order_id)
    except NotFoundError:
        abort(404)
