"""Braintree's XML, both ways, as its gateway writes it and its SDKs read it: elements
named with dashes (a request's underscores are read alike), `type="integer"`,
`"boolean"`, `"datetime"` and `"array"` (of `item`s, or of the items' own element),
`nil="true"` for nothing. Parsed with the standard library's ElementTree, never
expanding entities (defusedxml's rule: a request is client input)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from xml.etree import ElementTree

MAX_BODY = 64 * 1024  # no Braintree request of ours is near it


class XmlError(ValueError):
    """The body is not Braintree's XML."""


def parse(body: bytes) -> tuple[str, Any]:
    """The root element's name (with underscores) and what it holds."""
    if len(body) > MAX_BODY:
        raise XmlError("the body is too large")
    if b"<!DOCTYPE" in body or b"<!ENTITY" in body:
        raise XmlError("a document type is not accepted")
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError as exc:
        raise XmlError(f"not XML: {exc}") from None
    return _name(root.tag), _value(root)


def _name(tag: str) -> str:
    return tag.replace("-", "_")


def _value(node: ElementTree.Element) -> Any:
    kind, children = node.get("type"), list(node)
    if kind == "array":
        return [_value(child) for child in children]
    if node.get("nil") == "true":
        return None
    if children:
        found: dict[str, Any] = {}
        for child in children:
            found[_name(child.tag)] = _value(child)
        return found
    text = (node.text or "").strip()
    if kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise XmlError(f"{node.tag}: not an integer") from None
    if kind == "boolean":
        return text in ("true", "1")
    return text


def render(root: str, value: dict[str, Any]) -> bytes:
    """A response document: `root` (dashed) holding `value`."""
    element = _element(root, value)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(element)


# A tamper fault's field (sandbox/faults.py) by its name in a Braintree transaction.
TAMPERED_FIELDS = {"reference": "order_id", "currency": "currency_iso_code"}


def tampered(body: bytes, field: str, value: Any) -> bytes:
    """A transaction's answer with one field changed (a tamper fault); any other body as
    it was."""
    try:
        root, found = parse(body)
    except XmlError:
        return body
    if root != "transaction" or not isinstance(found, dict):
        return body
    found[TAMPERED_FIELDS.get(field, field)] = value if field != "amount" else str(value)
    return render(root, found)


def render_collection(root: str, item: str, values: list[dict[str, Any]], **fields: Any) -> bytes:
    """A search's page: `root` holding one `item` element per value (Braintree's
    `credit-card-transactions`, which its SDKs read as a list of `transaction`s), after
    the page's own `fields` (a dispute search's `total_items`, `page_size`)."""
    element = ElementTree.Element(root, {"type": "collection"})
    for key, value in fields.items():
        element.append(_element(key, value))
    for value in values:
        element.append(_element(item, value))
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(element)


def _element(name: str, value: Any) -> ElementTree.Element:
    node = ElementTree.Element(name.replace("_", "-"))
    if isinstance(value, dict):
        for key, item in value.items():
            node.append(_element(key, item))
    elif isinstance(value, list):
        node.set("type", "array")
        singular = name.replace("_", "-").removesuffix("s") if name.endswith("s") else "item"
        for item in value:
            node.append(_element(singular, item))
    elif value is None:
        node.set("nil", "true")
    elif isinstance(value, bool):
        node.set("type", "boolean")
        node.text = "true" if value else "false"
    elif isinstance(value, int):
        node.set("type", "integer")
        node.text = str(value)
    elif isinstance(value, datetime):
        node.set("type", "datetime")
        node.text = value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    elif isinstance(value, date):
        node.set("type", "date")
        node.text = value.isoformat()
    elif isinstance(value, Decimal):
        node.text = f"{value:.2f}"
    else:
        node.text = str(value)
    return node
