"""The request bodies as the contract states them: closed objects, one branch per
currency of the catalog, one line per SKU, the provider's minimum per currency."""

from __future__ import annotations

from typing import Any

from blueprints.api_bodies import TEXT_PATTERN, amount_branch, closed, new_order


def _line_rules(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return [branch["properties"]["items"] for branch in schema["anyOf"]]


def test_an_order_is_one_currency_and_one_line_per_sku() -> None:
    schema = new_order({"EUR": ["MUG", "TEE"], "USD": ["CAP"]})
    eur, usd = _line_rules(schema)
    assert eur["items"]["properties"]["sku"]["enum"] == ["MUG", "TEE"]
    assert usd["items"]["properties"]["sku"]["enum"] == ["CAP"]
    at_most_once = {
        (r["contains"]["properties"]["sku"]["const"], r["maxContains"]) for r in eur["allOf"]
    }
    assert at_most_once == {("MUG", 1), ("TEE", 1)}
    assert schema["additionalProperties"] is False
    line = schema["properties"]["items"]["items"]
    assert line["additionalProperties"] is False and line["required"] == ["sku", "quantity"]


def test_an_empty_catalog_admits_no_order() -> None:
    assert _line_rules(new_order({}))[0]["items"]["properties"]["sku"]["enum"] == []


def test_closed_objects_and_per_currency_amounts() -> None:
    body = closed({"a": {"type": "string", "pattern": TEXT_PATTERN}})
    assert body["required"] == ["a"] and body["additionalProperties"] is False
    branch = amount_branch("GBP", 30, 1_000_000)["properties"]
    assert branch["currency"] == {"const": "GBP"}
    assert branch["amount_minor"] == {"minimum": 30, "maximum": 1_000_000}
