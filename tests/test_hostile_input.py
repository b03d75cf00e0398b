"""Hostile input anywhere: every route of the URL map, hostile path and query values,
as a stranger, a customer and an admin. Nothing may answer 5xx."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.routing import Rule

from tests.admin_support import admin_login, make_admin
from tests.helpers import api_customer, seed_catalog
from tests.shop_support import login

HOSTILE_VALUES = [
    "2147483648",
    "99999999999999999999",
    "-5",
    "0",
    "abc",
    "1e999999",
    "%00",
    "\x00",
    "'; DROP TABLE payments; --",
    "x" * 3000,
    "/%0d%0aX-Injected:%201",
    "\r\nX-Injected: 1",
    "//evil.example/",
    "..%2f..%2fetc%2fpasswd",
    "\u202e\ufeff",
]
# Query names the app and Flask-Admin read: paging, ids, sorting, search, list filters.
QUERY_NAMES = ["page", "id", "sort", "desc", "search", "currency", "next", "url", "page_size"]
# Each query name with a rotating third of the hostile values, so that every value
# reaches every route under three names (the full product took four minutes a run).
VALUES_PER_NAME = len(HOSTILE_VALUES) // 3
QUERY_CASES = [
    {name: HOSTILE_VALUES[(VALUES_PER_NAME * i + k) % len(HOSTILE_VALUES)]}
    for i, name in enumerate(QUERY_NAMES)
    for k in range(VALUES_PER_NAME)
]
# flt<position>_<filter index>: the index picks the filter (and its parsing); the position
# only orders them, so one position walks every filter.
FILTER_NAMES = [f"flt0_{index}" for index in range(16)]
PATH_SAMPLES = {"int": ["2147483648", "99999999999999999999", "0"], "default": HOSTILE_VALUES}


def _paths(rule: Rule) -> Iterator[str]:
    """The rule with each argument replaced by hostile values (all arguments alike)."""
    if not rule.arguments:
        yield rule.rule
        return
    converters = {name: type(conv).__name__ for name, conv in rule._converters.items()}
    samples = (
        PATH_SAMPLES["int"]
        if all("Integer" in kind or "RowId" in kind for kind in converters.values())
        else ["abc", "2147483648", "%00", "x" * 300]
    )
    for value in samples:
        path = rule.rule
        for name in rule.arguments:
            path = re.sub(rf"<(?:[a-z]+:)?{name}>", value, path)
        yield path


def _walk(client: FlaskClient, app: Flask, headers: dict[str, str] | None = None) -> list[str]:
    failures = []
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static" or rule.endpoint.endswith(".static"):
            continue
        for index, path in enumerate(_paths(rule)):
            queries: list[dict[str, str]] = [{}]
            if index == 0:  # hostile paths, and hostile queries: QUERY_CASES
                queries += QUERY_CASES
            if index == 0 and path.startswith("/admin/admin_") and path.endswith("s/"):
                values = ("zz", "2147483648", "\x00", "-1")
                queries += [{name: v} for name in FILTER_NAMES for v in values]
            for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
                refused = False
                for query in queries:  # the bare request first
                    if refused and not query.keys() & {"next", "url"}:
                        continue  # refused before the view reads its input: so are these
                    response = client.open(
                        path, method=method, query_string=query, headers=headers or {}
                    )
                    if response.status_code >= 500:
                        failures.append(f"{method} {path} {query} -> {response.status_code}")
                    refused = refused or (not query and _refused(response))
    return failures


def _refused(response: Any) -> bool:
    """Refused for who is asking, before the view reads its input: 401, 403, or sent to a
    login page (whose redirect carries the query: walked with `next` and `url`)."""
    location = response.headers.get("Location", "")
    return response.status_code in (401, 403) or (
        response.status_code in (302, 303) and "/login" in location
    )


@pytest.fixture
def walker(app: Flask) -> Any:
    with app.app_context():
        seed_catalog()
    return _walk


def test_no_route_answers_5xx_to_a_stranger(app: Flask, client: FlaskClient, walker: Any) -> None:
    assert_no_5xx(walker(client, app))


def assert_no_5xx(failures: list[str]) -> None:
    assert not failures, f"{len(failures)} requests answered 5xx:\n" + "\n".join(failures)


def test_no_route_answers_5xx_to_a_customer(app: Flask, client: FlaskClient, walker: Any) -> None:
    login(client, app)
    _, headers = api_customer(app)
    assert_no_5xx(walker(client, app, headers))


def test_no_route_answers_5xx_to_an_admin(app: Flask, client: FlaskClient, walker: Any) -> None:
    make_admin(app)
    assert admin_login(client).status_code == 302
    assert_no_5xx(walker(client, app))
