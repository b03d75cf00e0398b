"""The contract's answer objects are built from the models' enums and say which fields
are always there (the contract test checks real answers against them)."""

from __future__ import annotations

from flask import Flask

from blueprints.api_schemas import REFUND_REQUEST, ref, response_object, values
from extensions import db
from models import Customer, OrderStatus, RefundRequestStatus
from models.types import utcnow
from services.payments.reads import refund_request_json
from services.refunds.requests import ask
from tests.factories import make_customer, make_order


def test_helpers_say_what_an_answer_holds() -> None:
    assert ref("Order") == {"$ref": "#/components/schemas/Order"}
    assert values(OrderStatus)["enum"] == [s.value for s in OrderStatus]
    made = response_object({"a": {}, "b": {}}, optional=("b",))
    assert made == {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"]}


def test_a_refund_requests_answer_has_every_field_of_its_schema(app_ctx: Flask) -> None:
    order = make_order(make_customer())
    order.status, order.paid_at = OrderStatus.PAID, utcnow()
    db.session.commit()
    customer = db.session.get(Customer, order.customer_id)
    assert customer is not None
    answer = refund_request_json(ask(customer, order.id, "broken mug"))
    assert set(answer) == set(REFUND_REQUEST["properties"]) == set(REFUND_REQUEST["required"])
    assert answer["status"] in values(RefundRequestStatus)["enum"]
