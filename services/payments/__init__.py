"""Payments: checkout, charging and reconciliation, 3-D Secure, failover, the state machine."""
