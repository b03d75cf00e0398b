"""The dashboard's disputes: every dispute the provider reported, read-only (they are
answered in the provider's own dashboard; the overview lists the open ones)."""

from __future__ import annotations

from typing import Any

from blueprints.admin.base import PAYMENT, ReadOnlyView, money_column


class DisputeView(ReadOnlyView):
    column_list = (
        "id",
        "status",
        "payment_id",
        "provider",
        "provider_dispute_id",
        "amount_minor",
        "reason",
        "evidence_due_by",
        "is_effect_applied",
        "created_at",
    )
    column_labels = {
        "provider_dispute_id": "Provider's id",
        "amount_minor": "Amount",
        "is_effect_applied": "Funds withdrawn",
    }
    column_filters = ("status", "provider", "reason", "created_at", "evidence_due_by")
    column_searchable_list = ("provider_dispute_id",)
    column_default_sort = ("id", True)
    column_formatters: dict[str, Any] = {"amount_minor": money_column, "payment_id": PAYMENT}
    column_details_list = (*column_list, "currency", "withdrawn_minor", "updated_at")
