"""Refunds: issuing, sending and reconciling, their state machine, their webhooks."""
