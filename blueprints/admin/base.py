"""What every dashboard view shares (a leaf: the views import it, it imports none of
them): the admin-only guard, the read-only list view, the money column."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from flask import flash, g, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_admin.contrib.sqla import ModelView
from flask_admin.contrib.sqla import filters as sqla_filters
from flask_admin.model import typefmt
from flask_admin.model.base import ViewArgs
from flask_admin.model.filters import convert
from markupsafe import Markup, escape
from sqlalchemy.exc import StatementError

from extensions import db
from models.money import exponent_of
from models.types import parse_row_id
from services.backoffice import admins
from services.backoffice.names import PaymentName, customer_emails, payment_names
from services.platform.errors import ClientError
from services.platform.locales import money_text


class AdminOnly:
    """Mixed into every admin view: no admin session, no page (redirect to the login);
    an action (a POST) of a view method named in `requires` needs that permission of
    the admin's role (services/backoffice/admins.py), or it is a 403 and nothing moves:
    a dashboard page naming the roles that may. Pages render only the forms of the
    admin's role (the `can` template global)."""

    requires: dict[str, str] = {}

    @property
    def extra_css(self) -> list[str]:
        return [url_for("static", filename="admin.css")]  # contrast, phone widths

    def is_accessible(self) -> bool:
        return admins.current_admin() is not None

    def _handle_view(self, name: str, **kwargs: Any) -> ResponseReturnValue | None:
        refused: ResponseReturnValue | None = super()._handle_view(name, **kwargs)  # type: ignore[misc]  # Flask-Admin's BaseView is untyped
        if refused is not None:
            return refused
        permission = self.requires.get(name)
        is_action = request.method == "POST"
        if is_action and permission and not admins.can(admins.current_admin(), permission):
            page = self.render(  # type: ignore[attr-defined]  # Flask-Admin's BaseView is untyped
                "dashboard/refused.html",
                permission=permission,
                roles=admins.roles_with(permission),
                admin_user=admins.current_admin(),
            )
            return page, 403
        return None

    def inaccessible_callback(self, name: Any, **kwargs: Any) -> ResponseReturnValue:
        return redirect(url_for("admin_auth.login", next=request.full_path.rstrip("?")))


def decide_from_form(decide: Callable[[int, str, str, Any], str], row_id: int) -> None:
    """An admin's decision of a row in review (a refund, a dispute), from its form:
    confirmed, with an outcome and a reason; what happened is flashed either way."""
    admin = admins.current_admin()
    assert admin is not None
    form = request.form
    try:
        if form.get("confirm") != "yes":
            raise ClientError("confirm the decision: it moves money")
        flash(decide(row_id, form.get("outcome", ""), form.get("reason", ""), admin), "success")
    except ClientError as exc:
        flash(str(exc), "error")


def console_time(moment: datetime | None) -> str:
    """A time as the admin reads it: in their time zone (UTC until they choose one on
    the Users page), to the second, the zone named ("2026-12-05 23:44:58 CET")."""
    if moment is None:
        return "-"
    if "console_zone" not in g:
        g.console_zone = admins.zone_of(admins.current_admin())
    local = _aware(moment).astimezone(g.console_zone)
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}"


def breaker_event(entry: str) -> str:
    """A breaker's logged event ("1796395208504 forced open": Redis' clock in ms, then
    what happened) with its time as the admin reads it."""
    stamp, _, what = entry.partition(" ")
    if not stamp.isdigit():
        return entry
    return f"{console_time(datetime.fromtimestamp(int(stamp) / 1000, UTC))}: {what}"


def link_to(endpoint: str, **fixed: Any) -> Any:
    """A column formatter: the id as a link to its record (`endpoint`'s page for it)."""

    def formatter(view: Any, context: Any, model: Any, name: str) -> Any:
        value = getattr(model, name)
        if value is None or context is None:  # no context: the CSV export, the bare id
            return value
        return Markup('<a href="{}">#{}</a>').format(url_for(endpoint, id=value), value)

    return formatter


RECORD_PAGES = {
    "payment": ("story.payment", "payment_id"),
    "order": ("admin_orders.details_view", "id"),
    "refund": ("admin_refunds.details_view", "id"),
    "dispute": ("admin_disputes.details_view", "id"),
}
RECORD_ID = re.compile(r"\b(payment|order|refund|dispute) #?(\d{1,10})\b")


def record_links(text: str) -> Markup:
    """A line of text whose "refund #3", "order #7" ... are links to those records
    (the payment's story, the admin's alerts): every id a person reads can be opened."""
    out, last = [], 0
    for found in RECORD_ID.finditer(text):
        endpoint, arg = RECORD_PAGES[found.group(1)]
        out.append(escape(text[last : found.start()]))
        values: dict[str, Any] = {arg: int(found.group(2))}
        url = url_for(endpoint, **values)
        out.append(Markup('<a href="{}">{}</a>').format(url, found.group(0)))
        last = found.end()
    out.append(escape(text[last:]))
    return Markup("").join(out)


def named_payment(payment_id: int | None) -> Markup | str:
    """A payment as people name it ("#12, EUR 10.00, anna@example.com, Visa 4242"),
    linked to its story; names a page loaded at once (`remember_payment_names`) are
    read from the request, any other is one query."""
    if payment_id is None:
        return ""
    known: dict[int, PaymentName] = g.setdefault("payment_names", {})
    if payment_id not in known:
        known.update(payment_names([payment_id]))
    found = known.get(payment_id)
    url = url_for("story.payment", payment_id=payment_id)
    return Markup('<a href="{}">{}</a>').format(url, found.text if found else f"#{payment_id}")


def remember_payment_names(payment_ids: Iterable[int | None]) -> None:
    """Load a page's payment names in one query (named_payment reads them)."""
    g.setdefault("payment_names", {}).update(payment_names(payment_ids))


def payment_column(view: Any, context: Any, model: Any, name: str) -> Any:
    """A column formatter: the payment id as its name, linked; the bare id in CSV."""
    value = getattr(model, name)
    return value if context is None else named_payment(value)


PAYMENT = payment_column


def customer_email(customer_id: int) -> str:
    """The customer's email (a page's are loaded at once by its list; any other is one
    query)."""
    known: dict[int, str] = g.setdefault("customer_emails", {})
    if customer_id not in known:
        known.update(customer_emails([customer_id]))
    return known.get(customer_id, f"#{customer_id}")


def customer_column(view: Any, context: Any, model: Any, name: str) -> Any:
    """A column formatter: the customer as their email (and id), linked; the id in CSV."""
    value = getattr(model, name)
    if value is None or context is None:
        return value
    url = url_for("admin_customers.details_view", id=value)
    return Markup('<a href="{}">{} (#{})</a>').format(url, customer_email(value), value)


ORDER = link_to("admin_orders.details_view")
CUSTOMER = customer_column
WALLET = link_to("admin_wallets.details_view")


MONEY_COLUMNS = frozenset({"amount_minor", "total_minor", "balance_minor", "balance_after_minor"})


def decimal_amount(amount_minor: int | None, currency: str) -> str:
    """An amount as a plain decimal number in its currency's units ("12.34", JPY "1234"),
    as a spreadsheet sums it."""
    if amount_minor is None:
        return ""
    return str(Decimal(amount_minor).scaleb(-exponent_of(currency)))


def money_column(view: Any, context: Any, model: Any, name: str) -> str:
    return money_text(getattr(model, name), model.currency)


EXPORT_MAX_ROWS = 10_000


def _enum_value(view: Any, value: enum.Enum, name: str) -> Any:
    """A state as it is stored and filtered ("succeeded"), not its Python name."""
    return value.value


def _aware(value: Any) -> Any:
    """A filter's typed time, read as UTC (the UTCDateTime columns refuse naive ones)."""
    return value.replace(tzinfo=UTC) if isinstance(value, datetime) and not value.tzinfo else value


class _InUTC:
    def clean(self, value: str) -> Any:
        cleaned = super().clean(value)  # type: ignore[misc]  # WTForms' fields are untyped
        return [_aware(v) for v in cleaned] if isinstance(cleaned, list) else _aware(cleaned)


class _ByValue:
    """Flask-Admin's enum filters look a member up by name, but offer (and our columns
    store) values: `?flt1_status_equals=succeeded` was refused as "does not exist"."""

    enum_class: Any

    def clean(self, value: str) -> Any:
        if self.enum_class is not None:
            names = {member.value: member.name for member in self.enum_class}
            value = ",".join(names.get(v.strip(), v) for v in value.split(","))
        return super().clean(value)  # type: ignore[misc]  # WTForms' fields are untyped


class FilterConverter(sqla_filters.FilterConverter):
    """Flask-Admin's filters, also for our UTCDateTime columns (date and time ranges),
    and enum filters that take the values they offer."""

    enum = tuple(
        f if f is sqla_filters.EnumFilterEmpty else type(f.__name__, (_ByValue, f), {})
        for f in sqla_filters.FilterConverter.enum
    )

    utc_filters = tuple(
        f if f is sqla_filters.FilterEmpty else type(f.__name__, (_InUTC, f), {})
        for f in sqla_filters.FilterConverter.datetime_filters
    )

    @convert("UTCDateTime")
    def conv_utc_datetime(self, column: Any, name: str, **kwargs: Any) -> list[Any]:
        return [f(column, name, **kwargs) for f in self.utc_filters]


# What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection"), and what
# it reads as a number, which is data and stays as it is.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")


def spreadsheet_safe(value: Any) -> Any:
    """An export cell that opens as text: a customer's `=HYPERLINK(...)@x.it` gets a
    leading `'` (OWASP's neutralisation), so no spreadsheet runs it; numbers pass."""
    is_formula = isinstance(value, str) and value.startswith(FORMULA_START)
    return "'" + value if is_formula and not PLAIN_NUMBER.fullmatch(value) else value


class ReadOnlyView(AdminOnly, ModelView):
    """Look, filter and search; never edit: every money change goes through services."""

    can_create = False
    can_edit = False
    can_delete = False
    can_view_details = True
    # Flask-Admin's own export: CSV of the filtered list, bounded (a bigger one is a
    # query for the database's own tools, not a web request).
    can_export = True
    export_types = ["csv"]
    export_max_rows = EXPORT_MAX_ROWS
    page_size = 50
    can_set_page_size = False
    named_filter_urls = True
    filter_converter = FilterConverter()  # ?flt1_status_equals=succeeded, readable and linkable
    # One readable form of time everywhere: the admin's zone, to the second, named;
    # CSV in ISO 8601 with the offset (UTC), as a spreadsheet or a script reads it.
    column_type_formatters = {
        **typefmt.BASE_FORMATTERS,
        enum.Enum: _enum_value,
        datetime: lambda view, value, name: console_time(value),
    }
    column_type_formatters_detail = {
        **typefmt.DETAIL_FORMATTERS,
        enum.Enum: _enum_value,
        datetime: lambda view, value, name: console_time(value),
    }
    column_type_formatters_export = {
        **typefmt.EXPORT_FORMATTERS,
        enum.Enum: _enum_value,
        datetime: lambda view, value, name: _aware(value).astimezone(UTC).isoformat("T", "seconds"),
    }
    column_labels = {
        "amount_minor": "Amount",
        "total_minor": "Total",
        "balance_minor": "Balance",
        "balance_after_minor": "Balance after",
        "provider_payment_id": "Provider's id",
        "provider_refund_id": "Provider's id",
        "idempotency_key": "Key",
        "customer.email": "Customer email",
        "customer_id": "Customer id",
        "created_at": "Created",
        "updated_at": "Updated",
    }

    def get_export_columns(self) -> list[tuple[Any, str]]:
        """The list's columns, and for a spreadsheet: the currency beside the first
        amount (amounts are plain decimal numbers there), the customer's email beside
        their id."""
        columns = list(super().get_export_columns())
        names = [name for name, _ in columns]
        money = [i for i, name in enumerate(names) if name in MONEY_COLUMNS]
        if money and "currency" not in names:
            columns.insert(money[0] + 1, ("currency", "Currency"))
        if "customer_id" in names:
            columns.insert(names.index("customer_id") + 1, ("customer_email", "Customer email"))
        return columns

    def currency_of(self, model: Any) -> str:
        return str(model.currency)

    def get_export_value(self, model: Any, name: Any) -> Any:
        if name == "customer_email":
            value: Any = customer_email(model.customer_id)
        elif name == "currency":
            value = self.currency_of(model)
        elif name in MONEY_COLUMNS:
            value = decimal_amount(getattr(model, name), self.currency_of(model))
        else:
            value = super().get_export_value(model, name)
        return spreadsheet_safe(value)

    def get_one(self, id: Any) -> Any:
        # `?id=abc` or an id past the integer range names no row: "record does not
        # exist" instead of a database error.
        row_id = parse_row_id(str(id))
        return None if row_id is None else super().get_one(str(row_id))

    def _get_list_extra_args(self) -> ViewArgs:
        """The list's query arguments, bounded: a page number that fits OFFSET, and
        search and filter text without NUL (PostgreSQL refuses it in a string)."""
        args = super()._get_list_extra_args()
        args.page = min(max(args.page or 0, 0), MAX_LIST_PAGE)
        if args.search:
            args.search = _clean_text(args.search)
        if args.filters:
            args.filters = [(i, name, _clean_text(v)) for i, name, v in args.filters]
        return args

    def _get_list_filter_args(self) -> Any:
        try:
            return super()._get_list_filter_args()
        except LookupError:  # Flask-Admin's enum filter raises KeyError for a bad value
            flash("That filter value does not exist; showing everything.", "error")
            return []

    def get_list(self, *args: Any, **kwargs: Any) -> Any:
        # A filter value the column cannot hold (a status that does not exist, a number
        # past the integer range) matches nothing: say so instead of failing the page.
        try:
            count, found = super().get_list(*args, **kwargs)
            paying = [n for n, f in self.column_formatters.items() if f is PAYMENT]
            remember_payment_names(getattr(row, n) for row in found for n in paying)
            emails = customer_emails(getattr(row, "customer_id", None) for row in found)
            g.setdefault("customer_emails", {}).update(emails)
            return count, found
        except (StatementError, LookupError, ValueError, OverflowError) as exc:
            db.session.rollback()
            cause = getattr(exc, "orig", None) or exc
            flash(f"Nothing can match that filter or search ({type(cause).__name__}).", "error")
            return 0, []


MAX_LIST_PAGE = 100_000  # 5 million rows deep at 50 a page; past it, search or filter


def _clean_text(value: Any) -> Any:
    return value.replace("\x00", "")[:200] if isinstance(value, str) else value
