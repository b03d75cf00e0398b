"""A stateful, fault-injecting payment provider simulator. Imports nothing from the app."""
