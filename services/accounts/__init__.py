"""Customer accounts and their login throttle."""
