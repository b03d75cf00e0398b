"""The wallet: its ledger, payments from it, its audit."""
