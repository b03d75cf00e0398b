"""The overview (breakers, queues, payments, disputes), the unknown payments an operator
works through, and the queues."""

from __future__ import annotations

from flask import flash, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_admin import AdminIndexView, BaseView, expose
from redis.exceptions import RedisError

from blueprints.admin.base import AdminOnly, remember_payment_names
from extensions import db
from models.types import utcnow
from services.backoffice import actions, admins, alerts, dashboard
from services.platform.errors import ClientError
from services.platform.provider_clients import breaker_for

REFRESH_S = 10  # the overview reloads itself: an operator at 3 a.m. should not have to


class OverviewView(AdminOnly, AdminIndexView):
    requires = {"breaker_action": admins.OPERATE}

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
                breaker = breaker_for(provider)
                breaker.force(action, actor=admin.email, reason=reason)
                alerts.breaker_alerts(breaker.snapshot())  # forced open: on-call is told
                db.session.commit()
                flash(f"Breaker {provider}: {action} ({reason.strip()}).", "success")
            except ValueError as exc:
                flash(str(exc), "error")
            except RedisError as exc:
                flash(f"Redis is unreachable: {exc}", "error")
        return redirect(url_for("admin.index"))


class UnknownPaymentsView(AdminOnly, BaseView):
    requires = {"reconcile": admins.OPERATE, "resolve": admins.OPERATE}

    @expose("/")
    def index(self) -> ResponseReturnValue:
        rows = dashboard.unknown_payments()
        remember_payment_names(row["payment"].id for row in rows)
        return self.render(
            "dashboard/unknown.html",
            rows=rows,
            now=utcnow(),
            pending=dashboard.payment_stats()["watched"].get("pending"),
        )

    @expose("/<id:payment_id>/reconcile", methods=["POST"])
    def reconcile(self, payment_id: int) -> ResponseReturnValue:
        try:
            actions.reconcile_now(payment_id)
            flash(
                f"Payment {payment_id}: a lookup is queued now; its answer (or, while the "
                "provider's circuit is open, the time of the next try) shows here once it ran.",
                "success",
            )
        except ClientError as exc:
            flash(str(exc), "error")
        return redirect(url_for("unknown.index"))

    @expose("/<id:payment_id>/resolve", methods=["POST"])
    def resolve(self, payment_id: int) -> ResponseReturnValue:
        admin = admins.current_admin()
        assert admin is not None
        try:
            if request.form.get("confirm") != "yes":
                raise ClientError("tick the confirmation: deciding a payment moves money")
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
