"""Benchmarks and drills (not imported by the app)."""
