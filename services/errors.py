"""Domain errors a client can cause: each has a stable code and the HTTP status it maps to."""

from __future__ import annotations


class ClientError(ValueError):
    """Bad input or a refused request; nothing was written."""

    code = "invalid_request"
    status = 400

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: dict[str, object] | None = None,
    ):
        super().__init__(message)
        self.details = details or {}
        if code:
            self.code = code
        if status:
            self.status = status


class NotFoundError(ClientError):
    code = "not_found"
    status = 404


class ConflictError(ClientError):
    code = "conflict"
    status = 409


class UnprocessableError(ClientError):
    code = "unprocessable"
    status = 422


def form_message(exc: ClientError) -> str:
    """A client error as a person at a form reads it (the API answers the code)."""
    if exc.code == "payment_method_missing":
        return "Enter your card details to pay."
    return str(exc)
