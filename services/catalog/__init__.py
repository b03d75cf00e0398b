"""The catalog: products, their admin, the demo data."""
