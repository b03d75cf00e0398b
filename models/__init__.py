"""SQLAlchemy models, one per file; importing this package registers them all."""

from models.admin_user import AdminRole, AdminUser
from models.alert import Alert, AlertKind
from models.customer import Customer
from models.dispute import (
    DISPUTE_TRANSITIONS,
    FUNDS_WITHDRAWN,
    Dispute,
    DisputeStatus,
    DisputeTransition,
)
from models.journal import ACCOUNT_PATTERN, Account, JournalEntry, Posting
from models.ledger_entry import SOURCE_OF_KIND, LedgerEntry, LedgerKind, Source, SourceKind
from models.order import PAID_LIKE, Order, OrderStatus
from models.order_line import OrderLine
from models.outbox import EmailKind, OutboxMessage, OutboxStatus
from models.payment import (
    ALLOWED_TRANSITIONS,
    FINAL_STATUSES,
    SETTLED_STATUSES,
    Payment,
    PaymentPurpose,
    PaymentStatus,
)
from models.payment_block import PaymentBlock
from models.payment_transition import ArchivedTransition, PaymentTransition, TransitionSource
from models.processed_webhook import ProcessedWebhook, WebhookState
from models.product import Product
from models.product_change import ProductChange
from models.provider_call import ProviderCall
from models.provider_customer import ProviderCustomer
from models.provider_payout import PayoutStatus, ProviderPayout
from models.reconciliation import (
    BalanceCorrection,
    BalanceMatch,
    BookDayAudit,
    DayAction,
    DayStatus,
    ItemOutcome,
    PayoutContent,
    ProviderBalanceTxn,
    ReconciliationDay,
    ReconciliationItem,
)
from models.refund import (
    OPEN_REFUND_STATUSES,
    REFUND_TRANSITIONS,
    Refund,
    RefundStatus,
    RefundTransition,
)
from models.refund_request import RefundRequest, RefundRequestStatus
from models.wallet import Wallet

__all__ = [
    "ACCOUNT_PATTERN",
    "ALLOWED_TRANSITIONS",
    "DISPUTE_TRANSITIONS",
    "FINAL_STATUSES",
    "FUNDS_WITHDRAWN",
    "OPEN_REFUND_STATUSES",
    "PAID_LIKE",
    "REFUND_TRANSITIONS",
    "SETTLED_STATUSES",
    "SOURCE_OF_KIND",
    "Account",
    "AdminRole",
    "AdminUser",
    "Alert",
    "AlertKind",
    "ArchivedTransition",
    "BalanceCorrection",
    "BalanceMatch",
    "BookDayAudit",
    "Customer",
    "DayAction",
    "DayStatus",
    "Dispute",
    "DisputeStatus",
    "DisputeTransition",
    "EmailKind",
    "ItemOutcome",
    "JournalEntry",
    "LedgerEntry",
    "LedgerKind",
    "Order",
    "OrderLine",
    "OrderStatus",
    "OutboxMessage",
    "OutboxStatus",
    "Payment",
    "PaymentBlock",
    "PaymentPurpose",
    "PaymentStatus",
    "PaymentTransition",
    "PayoutContent",
    "PayoutStatus",
    "Posting",
    "ProcessedWebhook",
    "Product",
    "ProductChange",
    "ProviderBalanceTxn",
    "ProviderCall",
    "ProviderCustomer",
    "ProviderPayout",
    "ReconciliationDay",
    "ReconciliationItem",
    "Refund",
    "RefundRequest",
    "RefundRequestStatus",
    "RefundStatus",
    "RefundTransition",
    "Source",
    "SourceKind",
    "TransitionSource",
    "Wallet",
    "WebhookState",
]
