"""Braintree's gateway over plain requests (the same client talks to Braintree and the
sandbox), its XML written and read by Braintree's own SDK's codec (`braintree.util`).

Braintree has no idempotency keys: a sale sent twice may charge twice, so a payment that
may have been sent is looked up by our reference (`order_id`) before anything is sent
again. Its answers, read as the movement engine needs them:
- its statuses are read by one table each (answers.py: TAKEN a success, DECLINED final
  without money, IN_PROGRESS asked again; any other status Unknown); a
  `settlement_declined` after a success comes as its own event, which fails the payment
  and reverses what its success booked;
- `processor_declined` and `failed` are declines, with the processor's code;
- an answer without a transaction (429, 503, 5xx, a balancer's page) is Unknown by the
  table HTTP_ANSWERS: Braintree keeps no keys, so nothing after the request left us is
  "not sent", and the engine searches before any repeat;
- `gateway_rejected` for `duplicate` is NOT a decline: the same card and amount went
  through moments ago, most likely our own first send: Unknown, so the lookup decides;
  other rejections (fraud, application incomplete) are declines with the reason;
- a nonce used before (93107) means a send got through before: Unknown, looked up;
- the search by `order_id` is not read-after-write (Braintree's index lags): what it finds
  is believed, but finding nothing never proves that a sale was not made (DESIGN's
  "absence needs a consistent read"), and Braintree has no consistent read by our
  reference. So a sale that may have been sent and is not found stays unknown, and the
  lifecycle sends it to review with the reason: it is never sent a second time by itself.
  (A refund's absence has a consistent read: its sale's `refund_ids`, refunds.py.)"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import requests
from braintree.util.xml_util import XmlUtil

from providers.base import KEYLESS, ChargeRequest
from providers.braintree.answers import (
    DECLINED,
    IN_PROGRESS,
    TAKEN,
    error_codes,
    listed,
    search_ids,
    transaction_report,
)
from providers.braintree.balance import BraintreeBalance
from providers.braintree.refunds import UNSETTLED_RETRY_S, BraintreeRefunds
from providers.http import HttpPolicy, build_session, classify_exception
from providers.outcomes import (
    Absent,
    CardShown,
    Declined,
    EventPage,
    LookupOutcome,
    NotSent,
    Outcome,
    Succeeded,
    Unknown,
)

log = logging.getLogger(__name__)

# A request can still be running at Braintree this long after we stopped waiting for it:
# a consistent read (a sale's refund_ids) proves a refund absent only after it.
SETTLE_S = 180
NONCE_USED = "93107"  # Cannot use a payment_method_nonce more than once.
API_VERSION = "6"


class BraintreeProvider(BraintreeRefunds, BraintreeBalance):
    name = "braintree"
    capabilities = KEYLESS

    def __init__(
        self,
        api_base: str,
        merchant_id: str,
        public_key: str,
        private_key: str,
        currency: str,
        policy: HttpPolicy,
        settle_s: float = SETTLE_S,
        unsettled_retry_s: float = UNSETTLED_RETRY_S,
        graphql_url: str = "",
    ) -> None:
        self.base = f"{api_base.rstrip('/')}/merchants/{merchant_id}"
        self.graphql_url = graphql_url or f"{api_base.rstrip('/')}/graphql"  # the fee report
        self.settle_s = settle_s  # BRAINTREE_SETTLE_S
        self.unsettled_retry_s = unsettled_retry_s  # BRAINTREE_UNSETTLED_RETRY_S
        self.currency = currency.upper()
        self.policy = policy
        self.session = build_session(policy, is_keyed_post_retryable=False)  # GETs only
        self.session.auth = (public_key, private_key)
        self.session.headers.update(
            {
                "Accept": "application/xml",
                "Content-Type": "application/xml",
                "X-ApiVersion": API_VERSION,
            }
        )

    # -- the calls ------------------------------------------------------------------

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """The answer as (status, dict), or the transport's NotSent/Unknown."""
        data = XmlUtil.xml_from_dict(body).encode() if body is not None else None
        try:
            response = self.session.request(
                method, f"{self.base}{path}", data=data, timeout=self.policy.timeout
            )
        except requests.RequestException as exc:
            return classify_exception(exc)
        return response

    def _read(self, response: requests.Response) -> dict[str, Any]:
        text = response.content.strip()
        if not text:
            return {}
        try:
            return dict(XmlUtil.dict_from_xml(text))
        except Exception as exc:  # the SDK's parser: any malformed answer
            return {"_malformed": f"{type(exc).__name__}: {str(exc)[:200]}"}

    # -- charging -------------------------------------------------------------------

    def charge(self, request: ChargeRequest) -> Outcome:
        """One sale. A sale that may have been sent before is looked up first by the
        engine (services/movements/engine.send_once), never here."""
        if request.currency.upper() != self.currency:
            return Declined("currency_not_accepted", f"the merchant account takes {self.currency}")
        sale = {
            "transaction": {
                "type": "sale",
                "amount": str(Decimal(request.amount_minor) / 100),
                "payment_method_nonce": request.payment_method or "",
                "order_id": request.reference,
                "options": {"submit_for_settlement": True},
            }
        }
        answer = self._call("POST", "/transactions", sale)
        if isinstance(answer, NotSent | Unknown):
            return answer
        return self._sale_outcome(answer)

    def _sale_outcome(self, response: requests.Response) -> Outcome:
        status = response.status_code
        body = self._read(response)
        if status in (200, 201) and isinstance(body.get("transaction"), dict):
            return transaction_outcome(body["transaction"])
        if status == 422 and isinstance(body.get("api_error_response"), dict):
            return _error_outcome(body["api_error_response"])
        return _http_outcome(response, body)

    def lookup(self, request: ChargeRequest) -> LookupOutcome:
        if request.provider_payment_id:
            answer = self._call("GET", f"/transactions/{request.provider_payment_id}")
            if isinstance(answer, NotSent | Unknown):
                return answer
            if answer.status_code == 404:  # not ours after all: no proof about ours
                return Unknown(f"Braintree has no transaction {request.provider_payment_id}")
            body = self._read(answer)
            if answer.status_code == 200 and isinstance(body.get("transaction"), dict):
                return transaction_outcome(body["transaction"])
            return _http_outcome(answer, body)
        return self._search(request)

    def _search(self, request: ChargeRequest) -> LookupOutcome:
        found = self.transactions_of(request.reference)
        if not isinstance(found, list):
            return found
        sales = [t for t in found if t.get("type") == "sale"]
        taken = [t for t in sales if t.get("status") in TAKEN]
        if len(taken) > 1:
            log.error(
                "braintree charged order id %s %d times (payment %s)",
                request.reference,
                len(taken),
                request.payment_id,
            )
        if taken:
            return transaction_outcome(taken[0])
        if sales:
            return transaction_outcome(sales[-1])
        return Unknown(
            f"Braintree's search shows no sale with order id {request.reference}; its index "
            "lags, so that never proves the card was not charged",
            is_provider_failure=False,
        )

    def transactions_of(self, reference: str) -> list[dict[str, Any]] | LookupOutcome:
        """The transactions Braintree's search finds with our reference as their order id
        (none: a hint, never proof), oldest first."""
        criteria = {"search": {"order_id": {"is": reference}}}
        answer = self._call("POST", "/transactions/advanced_search_ids", criteria)
        if isinstance(answer, NotSent | Unknown):
            return answer
        body = self._read(answer)
        ids = search_ids(body)
        if answer.status_code != 200 or ids is None:
            return _http_outcome(answer, body)
        if not ids:
            return []
        found = self._call("POST", "/transactions/advanced_search", {"search": {"ids": ids[:50]}})
        if isinstance(found, NotSent | Unknown):
            return found
        return listed(self._read(found), "credit_card_transactions", "transaction")

    def cancel(self, request: ChargeRequest) -> Outcome:
        """Braintree never waits for the customer here: what it knows is the answer."""
        found = self.lookup(request)
        if isinstance(found, Absent):
            return Unknown(found.reason, is_provider_failure=False)
        return found

    def undelivered_events(self, after: str | None = None) -> EventPage | None:
        """Braintree has no list of undelivered notifications: its webhooks are retried by
        Braintree, and a missed one is read again by the lookups."""
        return None


def transaction_outcome(txn: dict[str, Any]) -> Outcome:
    """What a sale says, checked: its id, amount and our reference as echoed."""
    txn_id = txn.get("id")
    if not isinstance(txn_id, str) or not txn_id:
        return Unknown("malformed answer: a transaction without an id")
    report = transaction_report(txn)
    status = txn.get("status")
    given = txn.get("credit_card")
    card: dict[str, Any] = given if isinstance(given, dict) else {}
    if status in TAKEN:
        brand = str(card.get("card_type") or "").lower().replace(" ", "_")
        return Succeeded(txn_id, report, CardShown.of(brand, card.get("last_4")))
    if status == "gateway_rejected":
        reason = str(txn.get("gateway_rejection_reason") or "")
        if reason == "duplicate":
            # Not "the first failed": the same sale went through moments ago.
            return Unknown("rejected as a duplicate: look it up", is_provider_failure=False)
        return Declined(f"gateway_rejected_{reason or 'unknown'}", reason, txn_id, report)
    if status in DECLINED:
        code = str(txn.get("processor_response_code") or status)
        text = str(txn.get("processor_response_text") or status)
        # Braintree's own identity of the card number (the same for every nonce of it):
        # card testing counts declines per card by it, as Stripe's fingerprint.
        identity = card.get("unique_number_identifier")
        fingerprint = identity if isinstance(identity, str) and 0 < len(identity) <= 64 else None
        return Declined(code, text, txn_id, report, card_fingerprint=fingerprint)
    if status in IN_PROGRESS:
        return Unknown(f"transaction {txn_id} is still {status}", is_provider_failure=False)
    return Unknown(
        f"transaction {txn_id} is {status!r}, a status not read here", is_provider_failure=False
    )


def _error_outcome(error: dict[str, Any]) -> Outcome:
    """A 422: a declined sale (with its transaction) or a validation error."""
    if isinstance(error.get("transaction"), dict):
        return transaction_outcome(error["transaction"])
    codes = error_codes(error.get("errors"))
    if NONCE_USED in codes:
        return Unknown(
            "the card's nonce was used before: look the sale up", is_provider_failure=False
        )
    message = str(error.get("message") or "validation error")
    return Declined(f"validation_{'_'.join(sorted(codes)) or 'error'}", message)


# Braintree's answers that carry no transaction and no validation error, read as the
# engine must read them. Braintree keeps no idempotency keys, so nothing that came after
# the request left us is NotSent: its docs say a 429 or 503 was not processed, but a
# balancer in front of it answers the same statuses after the sale was made, and nothing in
# the answer proves which one spoke. Each is Unknown, settled by a search before any
# repeat (services/movements/engine.send_once); the flag says whether the answer shows the
# provider unhealthy now (the breaker counts it). Any status not listed: Unknown, counted
# as a failure when it is a 5xx.
HTTP_ANSWERS: dict[int, tuple[str, bool]] = {
    401: ("authentication failed: check the BRAINTREE_* keys", False),
    403: ("authorization failed: check the BRAINTREE_* keys", False),
    404: ("not found", False),
    426: ("upgrade required: the API version is too old", False),
    429: ("rate limited", True),
    500: ("server error", True),
    502: ("bad gateway", True),
    503: ("down for maintenance, or a balancer's answer", True),
    504: ("gateway timeout", True),
}


def _http_outcome(response: requests.Response, body: dict[str, Any]) -> Outcome:
    status = response.status_code
    if status in (401, 403):
        log.error("braintree refused our keys (%s): check the BRAINTREE_* settings", status)
    said, is_failure = HTTP_ANSWERS.get(status, ("unexpected answer", status >= 500))
    detail = f": {str(body)[:200]}" if status not in HTTP_ANSWERS else ""
    return Unknown(
        f"Braintree answered {status} ({said}){detail}; it may have acted: "
        "searched before any repeat",
        is_provider_failure=is_failure,
    )
