"""Braintree's refunds, a part of BraintreeProvider. A refund is a `credit` transaction of
its own, made only once its sale has settled; before that, Braintree requires a void of
the whole sale instead (a part of an unsettled sale waits for its settlement). No
idempotency keys: a refund that may have been sent is looked up first, by a consistent
read (its sale's credits, by id, matched by our reference as their `order_id`), and sent
again only when Braintree provably has none."""

from __future__ import annotations

import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import requests

from providers.base import RefundRequest
from providers.braintree.answers import TAKEN, error_codes, transaction_report
from providers.outcomes import (
    Absent,
    Declined,
    LookupOutcome,
    NotSent,
    Outcome,
    Report,
    Succeeded,
    Unknown,
)

NOT_SETTLED = "91506"  # Cannot refund transaction unless it is settled.
UNSETTLED_RETRY_S = 3600.0  # a part of an unsettled sale is asked again after this


class BraintreeRefunds:
    """The refund calls of BraintreeProvider (which provides these attributes)."""

    _call: Callable[..., Any]
    _read: Callable[[requests.Response], dict[str, Any]]
    settle_s: float
    unsettled_retry_s: float

    def refund(self, request: RefundRequest) -> Outcome:
        """One credit. A refund that may have been sent before is looked up first by
        the engine (services/movements/engine.send_once), never here."""
        credit = {
            "transaction": {
                "amount": str(Decimal(request.amount_minor) / 100),
                "order_id": request.reference,
            }
        }
        sale_path = f"/transactions/{request.provider_payment_id}"
        answer = self._call("POST", f"{sale_path}/refund", credit)
        if isinstance(answer, NotSent | Unknown):
            return answer
        body = self._read(answer)
        if answer.status_code == 201 and isinstance(body.get("transaction"), dict):
            return _credit_outcome(body["transaction"])
        error = body.get("api_error_response")
        codes = error_codes(error)
        if answer.status_code == 422 and NOT_SETTLED in codes:
            return self._void_instead(request, sale_path)
        if answer.status_code == 422:
            message = str(error.get("message") if isinstance(error, dict) else "refused")
            return Declined(f"validation_{'_'.join(sorted(codes)) or 'error'}", message)
        return Unknown(f"unexpected answer {answer.status_code} to a refund")

    def _void_instead(self, request: RefundRequest, sale_path: str) -> Outcome:
        """An unsettled sale: the whole of it is voided; a part waits for its settlement."""
        answer = self._call("GET", sale_path)
        if isinstance(answer, NotSent | Unknown):
            return answer
        sale = self._read(answer).get("transaction")
        if answer.status_code != 200 or not isinstance(sale, dict):
            return Unknown(f"the sale could not be read ({answer.status_code})")
        if Decimal(str(sale.get("amount"))) * 100 != request.amount_minor:
            return NotSent(
                "the sale has not settled yet: a part waits", retry_after_s=self.unsettled_retry_s
            )
        voided = self._call("PUT", f"{sale_path}/void")
        if isinstance(voided, NotSent | Unknown):
            return voided
        txn = self._read(voided).get("transaction")
        if voided.status_code == 200 and isinstance(txn, dict) and txn.get("status") == "voided":
            return _void_outcome(txn, request)
        return Unknown(f"the void answered {voided.status_code}")

    def lookup_refund(self, request: RefundRequest) -> LookupOutcome:
        """A consistent read, never the search: the sale by its id lists its credits
        (`refund_ids`), each read by its id and matched by our reference; a voided sale is
        the void of a whole refund. None of ours is absence, once `settle_s` passed since
        our last send (before it, the request may still be running at Braintree)."""
        if request.first_sent_at is None:
            return Absent("never sent")
        sale = self._transaction(request.provider_payment_id)
        if not isinstance(sale, dict):
            return sale
        if sale.get("status") == "voided":
            return _void_outcome(sale, request)
        ids = sale.get("refund_ids")
        for credit_id in ids if isinstance(ids, list) else []:
            credit = self._transaction(str(credit_id))
            if not isinstance(credit, dict):
                return credit
            if credit.get("order_id") == request.reference:
                return _credit_outcome(credit)
        last_sent = request.last_sent_at or request.first_sent_at
        if time.time() - last_sent.timestamp() < self.settle_s:
            return Unknown("no credit of ours on the sale yet", is_provider_failure=False)
        return Absent(f"the sale lists no credit with order id {request.reference}")

    def _transaction(self, transaction_id: str) -> dict[str, Any] | LookupOutcome:
        answer = self._call("GET", f"/transactions/{transaction_id}")
        if isinstance(answer, NotSent | Unknown):
            return answer
        txn = self._read(answer).get("transaction")
        if answer.status_code != 200 or not isinstance(txn, dict):
            return Unknown(f"transaction {transaction_id} could not be read ({answer.status_code})")
        return txn


def _void_outcome(sale: dict[str, Any], request: RefundRequest) -> Outcome:
    """A whole refund made as the void of its sale: the answer names the sale, not our
    refund, so it is this refund's only if it is the refund's own sale (its id), and it
    states what the sale was for (its amount and currency, the refund's when whole)."""
    if sale.get("id") != request.provider_payment_id:
        return Unknown(f"the void answered for transaction {str(sale.get('id'))[:40]!r}")
    said = transaction_report(sale)
    report = Report(said.amount_minor, said.currency, reference=request.reference)
    return Succeeded(request.provider_payment_id, report)


def _credit_outcome(txn: dict[str, Any]) -> Outcome:
    """A refund's credit transaction: going back to the card (submitted, settling,
    settled), or refused."""
    credit_id = txn.get("id")
    if not isinstance(credit_id, str) or not credit_id:
        return Unknown("malformed answer: a credit without an id")
    if txn.get("status") in TAKEN:
        return Succeeded(credit_id, transaction_report(txn))
    code = str(txn.get("processor_response_code") or txn.get("status"))
    return Declined(code, str(txn.get("status")), credit_id, transaction_report(txn))
