"""`flask customers ...` and `flask admin ...`: account management from the shell."""

from __future__ import annotations

import secrets

import click
from flask.cli import AppGroup

from models import AdminRole
from services.accounts.customers import (
    AccountError,
    create_customer,
    is_password_long_enough,
    issue_api_token,
    normalize_email,
)
from services.backoffice import admins
from settings import settings

customers_cli = AppGroup("customers", help="Manage customers.")
admin_cli = AppGroup("admin", help="Manage dashboard administrators.")
ADMIN_PASSWORD_MIN = 12  # characters besides spaces: an admin can move money


@customers_cli.command("create")
@click.argument("email")
@click.option("--password", default=None, help="Login password (generated if omitted).")
def create_customer_command(email: str, password: str | None) -> None:
    """Create a customer and print its API bearer token (shown once)."""
    password = password or secrets.token_urlsafe(12)
    try:
        customer = create_customer(email, password, settings().money.currencies)
    except AccountError as exc:
        raise click.ClickException(str(exc)) from None
    token = issue_api_token(customer)
    click.echo(f"customer {customer.id}: {customer.email}")
    click.echo(f"password: {password}")
    click.echo(f"api token: {token}")


PASSWORD_OPTION = click.option(
    "--password", default=None, help="Password (prompted; generated if left empty)."
)


def _admin_credentials(email: str, password: str | None) -> tuple[str, str, bool]:
    """The normalized email, the password (prompted or generated), whether generated."""
    try:
        email = normalize_email(email)
    except AccountError as exc:
        raise click.ClickException(str(exc)) from None
    if password is None:
        password = click.prompt(
            "Password (empty to generate one)", default="", hide_input=True, show_default=False
        )
    generated = not password
    password = password or secrets.token_urlsafe(12)
    if not is_password_long_enough(password, ADMIN_PASSWORD_MIN):
        raise click.ClickException(
            f"Use an admin password of at least {ADMIN_PASSWORD_MIN} characters besides spaces."
        )
    return email, password, generated


@admin_cli.command("create")
@click.argument("email")
@PASSWORD_OPTION
@click.option(
    "--role",
    type=click.Choice([r.value for r in AdminRole]),
    default=AdminRole.ADMIN.value,
    show_default=True,
    help="viewer reads; operator also works breakers, lookups and reviews; refunder refunds; "
    "admin does all of it and the catalog.",
)
def create_admin_command(email: str, password: str | None, role: str) -> None:
    """Create a dashboard user with a role."""
    email, password, generated = _admin_credentials(email, password)
    try:
        admins.create_admin(email, password, AdminRole(role))
    except admins.AdminExistsError:
        raise click.ClickException(f"An admin with email {email} already exists.") from None
    click.echo(f"admin created: {email} ({role})")
    if generated:
        click.echo(f"password: {password}  (shown once)")


@admin_cli.command("set-password")
@click.argument("email")
@PASSWORD_OPTION
def set_admin_password_command(email: str, password: str | None) -> None:
    """Give an administrator a new password (a forgotten one); signs them out everywhere."""
    email, password, generated = _admin_credentials(email, password)
    try:
        admins.set_password(email, password)
    except admins.NoSuchAdminError:
        raise click.ClickException(
            f"No admin has the email {email} (create one: flask admin create {email})."
        ) from None
    click.echo(f"password changed: {email} (signed out everywhere)")
    if generated:
        click.echo(f"password: {password}  (shown once)")
