"""The error table the contract publishes: every code under one status only, and the
codes the app's own error pages and the edge answer are in it."""

from __future__ import annotations

from flask.testing import FlaskClient

from blueprints.api_errors import ERRORS, documented_codes, error_responses


def test_each_code_is_documented_under_one_status() -> None:
    seen = [code for _, codes in ERRORS.values() for code in codes]
    assert len(seen) == len(set(seen))
    assert set(error_responses()) == {f"E{status}" for status in ERRORS}


def test_the_apps_own_refusals_answer_documented_codes(client: FlaskClient) -> None:
    answers = {
        "404": client.get("/api/nowhere"),
        "405": client.put("/api/orders"),
        "401": client.get("/api/wallet"),
        "415": client.post("/api/orders", data=b"x", content_type="text/plain"),
    }
    for status, response in answers.items():
        assert str(response.status_code) == status
        assert response.get_json()["error"]["code"] in documented_codes(status)
    assert "Allow" in answers["405"].headers
