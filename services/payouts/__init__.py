"""Payouts: the provider sending our money to our bank, as its events tell it."""
