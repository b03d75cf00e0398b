"""What development runs on: the ports of make run, the URLs that follow them, and the
signs that a deployment is no development."""

from __future__ import annotations

import pytest

from dev_defaults import DEV_PORTS, dev_ports, dev_urls, production_signs
from providers.settings import ConfigError


def test_the_urls_follow_the_ports() -> None:
    assert dev_ports({}) == DEV_PORTS
    urls = dev_urls({"POSTGRES_PORT": "5500", "WEB_PORT": "5001"})
    assert urls["DATABASE_URL"] == "postgresql+psycopg://payments_app@127.0.0.1:5500/payments"
    assert urls["DATABASE_OWNER_URL"] == "postgresql+psycopg://postgres@127.0.0.1:5500/payments"
    assert urls["PUBLIC_URL"] == "http://127.0.0.1:5001"
    assert urls["REDIS_URL"] == f"redis://127.0.0.1:{DEV_PORTS['REDIS_PORT']}/0"


@pytest.mark.parametrize(
    ("raw", "says"), [("0", "TCP port"), ("65536", "TCP port"), ("x", "integer")]
)
def test_a_port_that_is_none_is_refused_by_name(raw: str, says: str) -> None:
    with pytest.raises(ConfigError, match=f"MAIL_SINK_PORT must be .*{says}"):
        dev_ports({"MAIL_SINK_PORT": raw})


def test_only_live_keys_and_public_https_addresses_look_like_production() -> None:
    assert production_signs(
        {
            "STRIPE_SECRET_KEY": "sk_live_1",
            "STRIPE_API_BASE": "https://api.stripe.com",
            "BRAINTREE_API_BASE": "https://127.0.0.1:9000",
            "PUBLIC_URL": "http://shop.test",
            "OTHER": "https://example.com",
        }
    ) == ["STRIPE_API_BASE", "STRIPE_SECRET_KEY"]
    assert production_signs({"STRIPE_SECRET_KEY": "sk_test_1"}) == []
