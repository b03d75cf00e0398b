"""Refunds: issuing them, the refund kind (declaration, answers, events), its state
machine, customers' refund requests."""
