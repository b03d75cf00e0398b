"""The wallet audit: every balance equals the sum of its ledger; no operation id twice."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field

from redis.exceptions import RedisError
from sqlalchemy import func, select

from extensions import db, redis_client
from models import LedgerEntry, Wallet
from models.types import utcnow

log = logging.getLogger(__name__)
LAST_RESULT_KEY = "wallet:audit:last"  # read by the admin dashboard


@dataclass
class AuditResult:
    checked_wallets: int
    mismatches: list[str] = field(default_factory=list)
    at: str = ""

    @property
    def is_ok(self) -> bool:
        return not self.mismatches


def audit_wallets() -> AuditResult:
    """Check every wallet and remember the result in Redis (best effort)."""
    ledger_sum = (
        select(LedgerEntry.wallet_id, func.sum(LedgerEntry.amount_minor).label("total"))
        .group_by(LedgerEntry.wallet_id)
        .subquery()
    )
    rows = db.session.execute(
        select(
            Wallet.id, Wallet.currency, Wallet.balance_minor, func.coalesce(ledger_sum.c.total, 0)
        )
        .outerjoin(ledger_sum, ledger_sum.c.wallet_id == Wallet.id)
        .order_by(Wallet.id)
    ).all()
    result = AuditResult(checked_wallets=len(rows), at=utcnow().isoformat())
    for wallet_id, currency, balance, total in rows:
        if balance != total:
            result.mismatches.append(
                f"wallet {wallet_id} ({currency}): balance {balance} != ledger sum {total}"
            )
        if balance < 0:
            result.mismatches.append(f"wallet {wallet_id} ({currency}): negative balance {balance}")
    duplicates = db.session.execute(
        select(LedgerEntry.operation_id, func.count())
        .group_by(LedgerEntry.operation_id)
        .having(func.count() > 1)
    ).all()
    for operation_id, count in duplicates:
        result.mismatches.append(f"operation id {operation_id} appears {count} times")
    db.session.rollback()
    try:
        redis_client.client.set(LAST_RESULT_KEY, json.dumps(asdict(result)))
    except RedisError as exc:
        log.warning("could not store the wallet audit result in Redis: %s", exc)
    return result


def last_audit() -> dict[str, object] | None:
    try:
        raw = redis_client.client.get(LAST_RESULT_KEY)
    except RedisError:
        return None
    return json.loads(raw) if raw else None
