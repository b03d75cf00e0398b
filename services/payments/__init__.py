"""Payments: orders and checkout, the charge kind (declaration, answers, events, the lean
success), 3-D Secure, routing to a provider, the state machine."""
