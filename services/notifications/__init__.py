"""Customer emails: the outbox and its delivery."""
