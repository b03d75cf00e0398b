"""The admin dashboard (Flask-Admin 2): every page and action behind the admin login."""

from __future__ import annotations

from typing import Any

from flask import (
    Blueprint,
    Flask,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)
from flask.typing import ResponseReturnValue
from flask_admin import Admin, AdminIndexView, BaseView, expose
from flask_admin.contrib.sqla import ModelView
from flask_admin.model.base import ViewArgs
from flask_admin.theme import Bootstrap4Theme
from markupsafe import Markup
from redis.exceptions import RedisError
from sqlalchemy.exc import StatementError

from blueprints.auth import TOO_MANY_ATTEMPTS, safe_next
from blueprints.headers import csp_nonce
from extensions import db
from models import (
    Customer,
    Dispute,
    LedgerEntry,
    Order,
    OutboxMessage,
    Payment,
    PaymentStatus,
    ProcessedWebhook,
    Refund,
    Wallet,
)
from models.types import parse_row_id
from services.backoffice import actions, admins, dashboard
from services.platform import retention
from services.platform.errors import ClientError
from services.platform.locales import money_text
from services.platform.provider_clients import breaker_for
from services.wallet.reads import wallet_currency

bp = Blueprint("admin_auth", __name__, url_prefix="/admin")
REFRESH_S = 10  # the overview reloads itself: an operator at 3 a.m. should not have to


@bp.route("/login", methods=["GET", "POST"])
def login() -> ResponseReturnValue:
    if request.method == "POST":
        try:
            admin = admins.authenticate(
                request.form.get("email", ""),
                request.form.get("password", ""),
                request.remote_addr or "unknown",
            )
        except admins.TooManyAttemptsError:
            flash(TOO_MANY_ATTEMPTS, "error")
            return render_template("dashboard/login.html"), 429
        if admin is None:
            flash("Email or password is wrong.", "error")
            return render_template("dashboard/login.html"), 400
        admins.log_in(admin)
        return redirect(safe_next(request.args.get("next"), url_for("admin.index"), "/admin"))
    return render_template("dashboard/login.html")


@bp.post("/logout")
def logout() -> ResponseReturnValue:
    admins.log_out()
    return redirect(url_for("admin_auth.login"))


class AdminOnly:
    """Mixed into every admin view: no admin session, no page (redirect to the login)."""

    def is_accessible(self) -> bool:
        return admins.current_admin() is not None

    def inaccessible_callback(self, name: Any, **kwargs: Any) -> ResponseReturnValue:
        return redirect(url_for("admin_auth.login", next=request.full_path.rstrip("?")))


class OverviewView(AdminOnly, AdminIndexView):
    @expose("/")
    def index(self) -> ResponseReturnValue:
        return self.render(
            "dashboard/overview.html",
            data=dashboard.overview(),
            refresh_s=REFRESH_S,
            admin_user=admins.current_admin(),
        )

    @expose("/breakers/<provider>", methods=["POST"])
    def breaker_action(self, provider: str) -> ResponseReturnValue:
        admin = admins.current_admin()
        assert admin is not None
        action = request.form.get("action", "")
        reason = request.form.get("reason", "")
        if request.form.get("confirm") != "yes":
            flash("Tick the confirmation box to change a breaker.", "error")
        elif provider not in dashboard.guarded_names():
            flash(f"Unknown provider {provider}.", "error")
        else:
            try:
                breaker_for(provider).force(action, actor=admin.email, reason=reason)
                flash(f"Breaker {provider}: {action} ({reason.strip()}).", "success")
            except ValueError as exc:
                flash(str(exc), "error")
            except RedisError as exc:
                flash(f"Redis is unreachable: {exc}", "error")
        return redirect(url_for("admin.index"))


class UnknownPaymentsView(AdminOnly, BaseView):
    @expose("/")
    def index(self) -> ResponseReturnValue:
        return self.render("dashboard/unknown.html", rows=dashboard.unknown_payments())

    @expose("/<id:payment_id>/reconcile", methods=["POST"])
    def reconcile(self, payment_id: int) -> ResponseReturnValue:
        try:
            actions.reconcile_now(payment_id)
            flash(f"Payment {payment_id}: a lookup is queued.", "success")
        except ClientError as exc:
            flash(str(exc), "error")
        return redirect(url_for("unknown.index"))

    @expose("/<id:payment_id>/resolve", methods=["POST"])
    def resolve(self, payment_id: int) -> ResponseReturnValue:
        admin = admins.current_admin()
        assert admin is not None
        try:
            done = actions.resolve(
                payment_id, request.form.get("outcome", ""), request.form.get("reason", ""), admin
            )
            flash(f"Resolved: {done}.", "success")
        except ClientError as exc:
            flash(str(exc), "error")
        return redirect(url_for("unknown.index"))


class QueuesView(AdminOnly, BaseView):
    @expose("/")
    def index(self) -> ResponseReturnValue:
        return self.render("dashboard/queues.html", queues=dashboard.queues())


def money_column(view: Any, context: Any, model: Any, name: str) -> str:
    return money_text(getattr(model, name), model.currency)


class ReadOnlyView(AdminOnly, ModelView):
    """Look, filter and search; never edit: every money change goes through services."""

    can_create = False
    can_edit = False
    can_delete = False
    can_view_details = True
    can_export = False
    page_size = 50
    can_set_page_size = False

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
            return super().get_list(*args, **kwargs)
        except (StatementError, LookupError, ValueError, OverflowError) as exc:
            db.session.rollback()
            cause = getattr(exc, "orig", None) or exc
            flash(f"Nothing can match that filter or search ({type(cause).__name__}).", "error")
            return 0, []


MAX_LIST_PAGE = 100_000  # 5 million rows deep at 50 a page; past it, search or filter


def _clean_text(value: Any) -> Any:
    return value.replace("\x00", "")[:200] if isinstance(value, str) else value


class PaymentView(ReadOnlyView):
    column_list = (
        "id",
        "status",
        "purpose",
        "provider",
        "amount_minor",
        "order_id",
        "idempotency_key",
        "provider_payment_id",
        "reconcile_attempts",
        "created_at",
        "updated_at",
    )
    column_filters = ("status", "provider", "purpose")
    column_searchable_list = ("provider_payment_id",)
    column_default_sort = ("id", True)
    column_formatters = {"amount_minor": money_column}
    column_details_list = (
        *column_list,
        "refunds",
        "currency",
        "decline_code",
        "first_sent_at",
        "last_sent_at",
        "send_count",
        "next_reconcile_at",
        "last_error",
        "transitions",
    )
    column_formatters_detail = {
        "amount_minor": money_column,
        "refunds": lambda v, c, m, n: Markup(
            '<a class="btn btn-sm btn-outline-danger" href="{}">Refunds</a>'
        ).format(url_for("refunds.payment", payment_id=m.id)),
        "transitions": lambda v, c, m, n: Markup("<br>").join(
            f"{t.created_at:%Y-%m-%d %H:%M:%S} {t.from_status or '-'} -> {t.to_status} "
            f"({t.source}{', ' + t.actor if t.actor else ''}): {t.reason}"
            for t in retention.transitions_of(m.id)
        ),
    }


class OrderView(ReadOnlyView):
    column_list = (
        "id",
        "customer_id",
        "status",
        "total_minor",
        "currency",
        "created_at",
        "paid_at",
    )
    column_filters = ("status", "customer_id")
    column_formatters = {"total_minor": money_column}
    column_default_sort = ("id", True)


class WebhookView(ReadOnlyView):
    column_list = (
        "id",
        "provider",
        "event_id",
        "event_type",
        "state",
        "payment_id",
        "note",
        "event_created_at",
        "received_at",
    )
    column_filters = ("provider", "state", "event_type")
    column_searchable_list = ("event_id",)
    column_default_sort = ("id", True)
    column_details_list = (*column_list, "processed_at", "payload")


class WalletView(ReadOnlyView):
    column_list = ("id", "customer_id", "currency", "balance_minor", "updated_at")
    column_filters = ("currency", "customer_id")
    column_formatters = {"balance_minor": money_column}


class LedgerView(ReadOnlyView):
    column_list = (
        "id",
        "wallet_id",
        "operation_id",
        "kind",
        "amount_minor",
        "balance_after_minor",
        "reference",
        "created_at",
    )
    column_filters = ("wallet_id", "kind")
    column_searchable_list = ("operation_id", "reference")
    column_default_sort = ("id", True)
    column_formatters: dict[str, Any] = {
        name: lambda v, c, m, n: money_text(getattr(m, n), wallet_currency(m.wallet_id))
        for name in ("amount_minor", "balance_after_minor")
    }


class CustomerView(ReadOnlyView):
    column_list = ("id", "email", "created_at")
    column_details_list = column_list
    column_searchable_list = ("email",)


def register(app: Flask) -> None:
    # The other dashboard views live in their own modules, which import this one.
    from blueprints.admin_catalog import CatalogView
    from blueprints.admin_disputes import DisputeView
    from blueprints.admin_outbox import OutboxView
    from blueprints.admin_refunds import RefundsView, RefundView
    from blueprints.admin_search import SearchView
    from blueprints.admin_story import PaymentStoryView

    app.register_blueprint(bp)
    admin = Admin(
        app,
        name="Payments admin",
        url="/admin",
        index_view=OverviewView(name="Overview", url="/admin"),
        theme=Bootstrap4Theme(swatch="default", fluid=True),
        csp_nonce_generator=csp_nonce,
    )
    admin.add_view(UnknownPaymentsView(name="Unknown payments", endpoint="unknown"))
    admin.add_view(QueuesView(name="Queues", endpoint="queues"))
    admin.add_view(CatalogView(name="Catalog", endpoint="catalog"))
    admin.add_view(RefundsView(name="Refund", endpoint="refunds"))
    admin.add_view(PaymentStoryView(name="Payment", endpoint="story", url="/admin/payment"))
    admin.add_view(SearchView(name="Search", endpoint="search"))
    for model, view in (
        (Payment, PaymentView),
        (Order, OrderView),
        (ProcessedWebhook, WebhookView),
        (Wallet, WalletView),
        (LedgerEntry, LedgerView),
        (Customer, CustomerView),
        (Refund, RefundView),
        (Dispute, DisputeView),
    ):
        admin.add_view(view(model, db, category="Records", endpoint=f"admin_{model.__tablename__}"))
    admin.add_view(OutboxView(OutboxMessage, db, name="Outbox", endpoint="outbox"))
    app.jinja_env.globals["PaymentStatus"] = PaymentStatus
