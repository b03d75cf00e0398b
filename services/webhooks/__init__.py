"""Provider webhooks: recorded once, applied in order and in batches, backfilled."""
