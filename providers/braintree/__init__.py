"""Braintree (PayPal's card gateway, no idempotency keys): its client, being built
(issue 51); not registered as a provider yet."""
