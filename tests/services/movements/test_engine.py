"""The Kind template holds: a fourth kind, declared here and nowhere else (a toy model,
its own table, its own state machine, a provider that forgets its first answer), is
swept by the janitor, sent by the send job, looked up by the lookup job and moved by
its provider's event through the one dispatcher, with no change to any other module."""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
import time_machine
from flask import Flask
from sqlalchemy import Engine, String, Uuid, select, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from extensions import db
from models import ProcessedWebhook, TransitionSource, WebhookState
from models.types import UTCDateTime, str_enum, utcnow
from providers.events import ProviderEvent
from providers.outcomes import Absent, Report, Succeeded, Unknown
from services.movements import engine, janitor, kinds, lifecycle
from services.webhooks import events
from tests.helpers import queued_job_ids, run_jobs
from tests.webhook_support import recorded


class ToyStatus(enum.StrEnum):
    PENDING = "pending"
    UNKNOWN = "unknown"
    DONE = "done"
    FAILED = "failed"
    NEEDS_REVIEW = "review"


MOVES = {
    ToyStatus.PENDING: {ToyStatus.UNKNOWN, ToyStatus.DONE, ToyStatus.FAILED},
    ToyStatus.UNKNOWN: {ToyStatus.DONE, ToyStatus.FAILED, ToyStatus.NEEDS_REVIEW},
}


class ToyBase(DeclarativeBase):
    pass


class Toy(ToyBase):
    """The columns a movement row has (lifecycle.Movement), and a status."""

    __tablename__ = "toy_movements"
    id: Mapped[int] = mapped_column(primary_key=True)
    idempotency_key: Mapped[uuid.UUID] = mapped_column(Uuid(), default=uuid.uuid4)
    provider: Mapped[str] = mapped_column(String(32), default="braintree")
    status: Mapped[ToyStatus] = mapped_column(
        str_enum(ToyStatus, "toy_status"), default=ToyStatus.PENDING
    )
    first_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    last_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    send_count: Mapped[int] = mapped_column(default=0)
    lease_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    next_reconcile_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    reconcile_attempts: Mapped[int] = mapped_column(default=0)
    last_error: Mapped[str | None] = mapped_column(String(500))
    provider_ref: Mapped[str | None] = mapped_column(String(64))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


@dataclass(frozen=True)
class ToyRequest:
    toy_id: int
    key: str


SENT: list[str] = []  # what the toy provider was asked to do
LOOKUP_ANSWERS: list[Any] = []  # what its lookups answer, in turn (none left: Succeeded)


def _send(provider: object, request: ToyRequest) -> Unknown:
    SENT.append(f"send {request.toy_id}")
    return Unknown("read timeout")  # it did it, and the answer was lost


def _lookup(provider: object, request: ToyRequest) -> Any:
    SENT.append(f"lookup {request.toy_id}")
    if LOOKUP_ANSWERS:
        return LOOKUP_ANSWERS.pop(0)
    return Succeeded(f"toy_{request.toy_id}", Report(our_id=str(request.toy_id)))


def _move(row: Toy, to: ToyStatus, *, source: TransitionSource, reason: str, **_: Any) -> bool:
    if to not in MOVES.get(row.status, set()):
        return False
    row.status, row.updated_at = to, utcnow()
    return True


def _lock(row_id: int) -> Toy | None:
    return db.session.scalar(
        select(Toy)
        .where(Toy.id == row_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )


def _apply(
    kind: kinds.Kind, row: Toy, outcome: Any, source: TransitionSource, sent: Any
) -> lifecycle.FollowUp:
    if isinstance(outcome, Succeeded):
        row.provider_ref = outcome.provider_payment_id
        _move(row, ToyStatus.DONE, source=source, reason="done")
        return lifecycle.nothing
    row.last_error = outcome.reason
    if source == kind.send_source:
        _move(row, ToyStatus.UNKNOWN, source=source, reason=outcome.reason)
    return lifecycle.schedule_lookup(kind, row)


def _on_event(provider: str, event: ProviderEvent, record: ProcessedWebhook, located: Any) -> str:
    row = _lock(int(event.report.our_id or 0))
    if row is None:
        record.state, record.note = WebhookState.PENDING, "toy not found yet"
        return record.state
    _move(row, ToyStatus.DONE, source=TransitionSource.WEBHOOK, reason=event.event_id)
    record.state, record.note = WebhookState.APPLIED, f"toy {row.id}: {row.status.value}"
    return record.state


TOY = kinds.Kind(
    name="toy",
    noun="toy",
    model=Toy,
    statuses=ToyStatus,
    looked_up=(ToyStatus.UNKNOWN,),
    send_source=TransitionSource.CHARGE,
    lookup_prefix="toy-lookup",
    move=_move,
    lock=_lock,
    request_for=lambda row, first_sent_at: ToyRequest(row.id, str(row.idempotency_key)),
    named=lambda request, provider_id: request,
    send=_send,
    lookup=_lookup,
    apply=_apply,
    on_event=_on_event,
    locate_event=lambda provider, event: None,
)


@pytest.fixture
def toy_kind(app: Flask, owner_engine: Engine) -> Iterator[kinds.Kind]:
    # Made by the owner (the app's role owns nothing) and given to the app's role.
    ToyBase.metadata.create_all(owner_engine)
    with owner_engine.begin() as conn:
        conn.execute(text("GRANT ALL ON toy_movements, toy_movements_id_seq TO payments_app"))
    kinds.register(TOY)
    SENT.clear()
    LOOKUP_ANSWERS.clear()
    yield TOY
    del kinds.KINDS["toy"], kinds.EVENT_HANDLERS["toy"]
    with app.app_context():
        db.session.rollback()
        db.session.remove()
    ToyBase.metadata.drop_all(owner_engine)


def _toy(app: Flask, row_id: int) -> Toy:
    with app.app_context():
        row = db.session.get(Toy, row_id)
        assert row is not None
        db.session.expunge(row)
        return row


def test_a_fourth_kind_is_swept_sent_looked_up_and_moved_by_its_event(
    app: Flask, toy_kind: kinds.Kind
) -> None:
    with app.app_context():
        lost = Toy(updated_at=utcnow() - timedelta(hours=1))  # its job was lost
        waiting = Toy(status=ToyStatus.UNKNOWN, first_sent_at=utcnow(), next_reconcile_at=None)
        db.session.add_all([lost, waiting])
        db.session.commit()
        lost_id, waiting_id = lost.id, waiting.id
        # The janitor finds it by the registry alone: the lost send, and the lookup that is
        # due (the other toy's: it has none planned).
        assert janitor.sweep() == 2
    assert set(queued_job_ids(app, "braintree")) >= {f"toy-{lost_id}", f"toy-lookup-{waiting_id}-0"}
    run_jobs(app, "braintree")  # the send job and the lookup job, by the kind's name
    assert [f"send {lost_id}", f"lookup {waiting_id}"] == SENT
    sent = _toy(app, lost_id)
    assert (sent.status, sent.send_count, sent.lease_expires_at) == (ToyStatus.UNKNOWN, 1, None)
    assert sent.first_sent_at is not None and sent.next_reconcile_at is not None
    looked_up = _toy(app, waiting_id)
    assert (looked_up.status, looked_up.provider_ref) == (ToyStatus.DONE, f"toy_{waiting_id}")
    assert looked_up.reconcile_attempts == 1  # counted like every kind's
    # Its next lookup is planned by the lifecycle; the lookup job, when due, settles it.
    with time_machine.travel(utcnow() + timedelta(minutes=30), tick=True), app.app_context():
        engine.look_up(TOY, lost_id)
    assert _toy(app, lost_id).status == ToyStatus.DONE
    # A third one, moved by its provider's event through the dispatcher of every kind.
    with app.app_context():
        evented = Toy(status=ToyStatus.UNKNOWN, first_sent_at=utcnow())
        db.session.add(evented)
        db.session.commit()
        event = ProviderEvent(
            "evt_toy_1",
            "toy.done",
            utcnow(),
            "succeeded",
            "toy_x",
            Report(our_id=str(evented.id)),
            kind="toy",
        )
        record = recorded(event, "braintree")
        assert events.apply_event("braintree", event, record) == WebhookState.APPLIED
        db.session.commit()
        assert record.note == f"toy {evented.id}: done"
    assert _toy(app, evented.id).status == ToyStatus.DONE


@pytest.mark.parametrize("kind_name", ["charge", "refund"])
def test_every_kind_is_claimed_by_one_conditional_update_one_winner_among_threads(
    app: Flask, kind_name: str
) -> None:
    """Issue 49 (c): a charge was claimed by a conditional UPDATE and a refund by lock-then-
    check. Now both by the engine's one statement: of eight threads claiming the same
    pending row at once, one takes it and marks it sent once; a leased row is nobody's."""
    import threading

    from tests.factories import make_customer, make_order, make_payment, make_refund

    kind = kinds.named(kind_name)
    with app.app_context():
        payment = make_payment(make_order(make_customer()))
        row = make_refund(payment) if kind_name == "refund" else payment
        db.session.commit()
        row_id = row.id
    won: list[object] = []
    start = threading.Barrier(8)

    def claim() -> None:
        with app.app_context():
            start.wait()
            claimed = engine.claim(kind, row_id, utcnow(), is_send=True)
            if claimed is not None:
                won.append(claimed.row.id)

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert won == [row_id]
    with app.app_context():
        taken = db.session.get(kind.model, row_id)
        assert taken is not None
        assert taken.send_count == 1 and taken.lease_expires_at is not None
        assert engine.claim(kind, row_id, utcnow()) is None  # leased (and not looked up)
        assert engine.claim(kind, row_id, utcnow(), is_send=True) is None


def test_a_keyless_kind_is_never_sent_again_without_a_lookup_that_proves_absence(
    app: Flask, toy_kind: kinds.Kind
) -> None:
    """DESIGN 19, in the engine for every kind of a provider without keys (the toy's is
    Braintree): a row whose request may have left is looked up before any send, on the
    send job's path and on the lookup's resend, and only Absent lets it go out again."""
    with app.app_context():
        fresh = Toy()
        maybe_sent = Toy(first_sent_at=utcnow() - timedelta(minutes=5), send_count=1)
        lost = Toy(status=ToyStatus.UNKNOWN, first_sent_at=utcnow() - timedelta(hours=1))
        db.session.add_all([fresh, maybe_sent, lost])
        db.session.commit()
        ids = fresh.id, maybe_sent.id, lost.id
    with app.app_context():
        engine.send(TOY, ids[0])
    assert [f"send {ids[0]}"] == SENT  # never sent: no lookup needed
    SENT.clear()
    LOOKUP_ANSWERS.append(Unknown("search finds nothing yet", is_provider_failure=False))
    with app.app_context():
        engine.send(TOY, ids[1])  # pending again (a janitor's sweep) but maybe sent
    assert [f"lookup {ids[1]}"] == SENT  # asked, and not proven absent: not sent
    assert _toy(app, ids[1]).status == ToyStatus.UNKNOWN
    SENT.clear()
    LOOKUP_ANSWERS.extend([Absent("a consistent read has none")] * 2)
    with app.app_context():
        engine.look_up(TOY, ids[2])  # proven absent: sent again, after one more lookup
    assert [f"lookup {ids[2]}", f"lookup {ids[2]}", f"send {ids[2]}"] == SENT
