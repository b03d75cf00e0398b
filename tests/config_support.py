"""A complete production environment (no development secret), for tests of the start checks."""

from __future__ import annotations

PRODUCTION = {
    "APP_ENV": "production",
    "SECRET_KEY": "k3Yq9x2VbT7mWz4pLr8sNc6dFh1jGa5u",
    "DATABASE_URL": "postgresql+psycopg://db/payments",
    "REDIS_URL": "redis://redis:6379/0",
    "STRIPE_API_BASE": "https://api.stripe.com",
    "STRIPE_SECRET_KEY": "sk_live_x",
    "STRIPE_WEBHOOK_SECRET": "whsec_x",
    "STRIPE_PUBLISHABLE_KEY": "pk_live_x",
    "PUBLIC_URL": "https://shop.example",
    "SMTP_URL": "smtps://shop:mail-secret@mail.example:465",
    "BRAINTREE_MERCHANT_ID": "shop_merchant",
    "BRAINTREE_PUBLIC_KEY": "bt_public_x",
    "BRAINTREE_PRIVATE_KEY": "bt_private_x",
    "BRAINTREE_TOKENIZATION_KEY": "production_ab12cd34_shop_merchant",
}
