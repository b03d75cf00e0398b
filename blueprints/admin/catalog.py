"""The catalog in the dashboard: products, active and retired; create, edit, retire and
restore, each recorded with the admin (services/catalog/admin.py)."""

from __future__ import annotations

from flask import abort, flash, redirect, request, url_for
from flask.typing import ResponseReturnValue
from flask_admin import BaseView, expose

from blueprints.admin.base import AdminOnly
from services.backoffice import admins
from services.catalog.admin import (
    all_products,
    create_product,
    edit_product,
    product_page,
    set_active,
)
from services.platform.errors import ClientError
from services.platform.locales import current_locale
from settings import settings


def _actor() -> str:
    admin = admins.current_admin()
    assert admin is not None
    return str(admin.email)


class CatalogView(AdminOnly, BaseView):
    requires = {"new": admins.CATALOG, "product": admins.CATALOG, "active": admins.CATALOG}

    @expose("/")
    def index(self) -> ResponseReturnValue:
        return self.render(
            "dashboard/catalog.html",
            products=all_products(),
            currencies=settings().money.currencies,
            form={},
        )

    @expose("/new", methods=["POST"])
    def new(self) -> ResponseReturnValue:
        try:
            product = create_product(request.form.to_dict(), _actor(), current_locale())
        except ClientError as exc:
            flash(str(exc), "error")
            return self.render(
                "dashboard/catalog.html",
                products=all_products(),
                currencies=settings().money.currencies,
                form=request.form,
            ), 422
        flash(f"Product {product.sku} created.", "success")
        return redirect(url_for(".product", product_id=product.id), code=303)

    @expose("/<id:product_id>", methods=["GET", "POST"])
    def product(self, product_id: int) -> ResponseReturnValue:
        page = product_page(product_id)
        if page is None:
            abort(404)
        if request.method == "POST":
            try:
                edit_product(product_id, request.form.to_dict(), _actor(), current_locale())
                flash("Saved. Orders already placed keep their prices.", "success")
                return redirect(url_for(".product", product_id=product_id), code=303)
            except ClientError as exc:
                flash(str(exc), "error")
            page = product_page(product_id)
            assert page is not None
        product, changes = page
        return self.render(
            "dashboard/product.html",
            product=product,
            changes=changes,
            currencies=settings().money.currencies,
        )

    @expose("/<id:product_id>/active", methods=["POST"])
    def active(self, product_id: int) -> ResponseReturnValue:
        try:
            product = set_active(product_id, request.form.get("active") == "yes", _actor())
        except ClientError as exc:
            flash(str(exc), "error")
            return redirect(url_for(".index"), code=303)
        flash(f"{product.sku} is {'on sale' if product.is_active else 'retired'}.", "success")
        return redirect(url_for(".product", product_id=product_id), code=303)
