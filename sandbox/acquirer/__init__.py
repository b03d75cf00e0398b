"""The acquirer dialect of the sandbox: its API and hosted-card flow."""
