"""The operators' side: admin accounts, decisions, the dashboard, search, timelines."""
