"""The money-movement engine: one lifecycle for every kind of movement sent to a provider."""
