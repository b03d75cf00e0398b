"""Disputes: chargebacks and inquiries the provider reports, and their effect."""
