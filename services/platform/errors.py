"""Domain errors a client can cause: each has a stable code and the HTTP status it maps to."""

from __future__ import annotations

from flask_babel import gettext

from models.money import N_, Money, format
from services.platform.locales import current_locale


class ClientError(ValueError):
    """Bad input or a refused request; nothing was written."""

    code = "invalid_request"
    status = 400

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: dict[str, object] | None = None,
    ):
        super().__init__(message)
        self.details = details or {}
        if code:
            self.code = code
        if status:
            self.status = status

    def headers(self) -> dict[str, str]:
        """The answer's headers a client needs: Retry-After for a limit (its details'
        `retry_after_s`), on the API and on the pages alike."""
        retry_after_s = self.details.get("retry_after_s")
        return {"Retry-After": str(retry_after_s)} if isinstance(retry_after_s, int) else {}


class NotFoundError(ClientError):
    code = "not_found"
    status = 404


class ConflictError(ClientError):
    code = "conflict"
    status = 409


class UnprocessableError(ClientError):
    code = "unprocessable"
    status = 422


# What a customer at a form reads for each code, in their language (the API answers the
# code and its English message; the dashboard shows the message as it is).
FORM_MESSAGES = {
    "payment_method_missing": N_("Enter your card details to pay."),
    "payment_method_invalid": N_("The card details could not be read; enter them again."),
    "provider_invalid": N_("This form is out of date; please try again."),
    "currency_not_served": N_("Card payments in this currency are unavailable right now."),
    "provider_currency_invalid": N_("Card payments in this currency are unavailable right now."),
    "order_not_open": N_("This order is no longer waiting for payment."),
    "order_payment_in_progress": N_("This order is already being paid."),
    "insufficient_funds": N_("Your wallet holds %(balance)s: not enough for this."),
    "idempotency_key_reused": N_("This form is out of date; please try again."),
    "idempotency_key_invalid": N_("This form is out of date; please try again."),
    "idempotency_key_missing": N_("This form is out of date; please try again."),
    "wallet_not_found": N_("You have no wallet in this currency."),
    "unknown_sku": N_("A product in your cart is no longer on sale."),
    "invalid_quantity": N_("Choose 1 to 100 pieces of a product."),
    "mixed_currencies": N_("Products in different currencies need separate orders."),
    "order_not_found": N_("We could not find this order."),
    "payment_not_found": N_("We could not find this payment."),
    "invalid_amount": N_("This amount cannot be paid here."),
    "amount_too_small": N_("Card payments start at %(minimum)s."),
    "reason_required": N_("Tell us why, in 5 to 500 characters."),
    "too_many_declines": N_(
        "Too many card payments were declined. Please wait a few minutes before you try again."
    ),
}


def form_message(exc: ClientError) -> str:
    """A client error as a person at a form reads it, in their language (the amounts in
    its `details` formatted there)."""
    message = FORM_MESSAGES.get(exc.code)
    if message is None:
        return str(exc)
    locale = current_locale()
    shown = {k: format(v, locale) for k, v in exc.details.items() if isinstance(v, Money)}
    return gettext(message, **shown)
