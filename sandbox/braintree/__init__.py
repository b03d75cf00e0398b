"""The sandbox speaks Braintree: its gateway's XML API, as its own SDK calls it."""
