"""The Stripe dialect of the sandbox: its API, Stripe.js stand-in and 3-D Secure page."""
