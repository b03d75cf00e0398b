"""The shape of the house: the product never imports its drills or benchmarks, and
does not ship them."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = [
    "app.py", "wsgi.py", "config.py", "settings.py", "extensions.py", "logs.py",
    "blueprints", "commands", "jobs", "models", "providers", "resilience", "services",
    "sandbox", "devtools",
]  # fmt: skip


def _modules(*roots: str) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        path = ROOT / root
        found += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return found


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_product_module_imports_bench() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in _modules(*PRODUCT)
        if any(name == "bench" or name.startswith("bench.") for name in imports_of(path))
    ]
    assert offenders == []


def test_the_package_does_not_ship_bench() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    included = project["tool"]["setuptools"]["packages"]["find"]["include"]
    assert not any(pattern.startswith("bench") for pattern in included)


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK_RE = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


def test_readme_is_a_newcomers_path() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) < 250


def test_documentation_links_stay_inside_the_repository_and_resolve() -> None:
    problems = []
    for doc in DOCS:
        for target, _anchor in LINK_RE.findall(doc.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path = (doc.parent / target).resolve()
            if not path.is_relative_to(ROOT):
                problems.append(f"{doc.name} links outside the repository: {target}")
            elif not path.exists():
                problems.append(f"{doc.name} links to a missing file: {target}")
    assert problems == []


TOP = ("blueprints", "jobs", "commands")
LOW = ("models", "providers", "resilience")


def _root_of(module: str) -> str:
    return module.split(".")[0]


@pytest.mark.parametrize(
    ("layer", "forbidden"),
    [
        ("services", TOP),
        ("models", (*TOP, "services")),
        ("providers", (*TOP, "services", "models", "extensions", "flask")),
        ("resilience", (*TOP, "services", "models", "extensions", "flask")),
    ],
)
def test_imports_point_down(layer: str, forbidden: tuple[str, ...]) -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(layer)
        for name in sorted(imports_of(path))
        if _root_of(name) in forbidden
    ]
    assert offenders == []


# The domain packages of services/, lowest first: a package imports only packages of a
# lower rank (no loops; payments and disputes stand side by side and import neither).
DOMAIN_RANKS = {
    "platform": 0,
    "notifications": 1,
    "accounts": 2,
    "books": 2,
    "wallet": 3,
    "movements": 4,
    "payments": 5,
    "disputes": 5,
    "payouts": 5,
    "refunds": 6,
    "webhooks": 7,
    "backoffice": 8,
    "catalog": 9,
    "statements": 9,
}


def domain_violations(imports: dict[str, set[str]]) -> list[str]:
    """The imports (module path -> modules it imports) that point up or sideways
    between services' domain packages, or touch a package without a rank."""
    found = []
    for path, names in sorted(imports.items()):
        parts = Path(path).parts
        if len(parts) < 3 or parts[0] != "services":
            continue
        own = parts[1]
        for name in sorted(names):
            other = name.split(".")[1] if name.startswith("services.") else None
            if other is None or other == own:
                continue
            if own not in DOMAIN_RANKS or other not in DOMAIN_RANKS:
                found.append(f"{path}: {own} or {other} has no rank")
            elif DOMAIN_RANKS[other] >= DOMAIN_RANKS[own]:
                found.append(f"{path} ({own}) imports {name} ({other})")
    return found


def test_services_domains_import_only_lower_ones() -> None:
    imports = {str(p.relative_to(ROOT)): imports_of(p) for p in _modules("services")}
    assert domain_violations(imports) == []
    # the rule bites: a planted reverse import (the platform importing a kind) is caught
    planted = {**imports, "services/platform/queues.py": {"services.movements.kinds"}}
    assert domain_violations(planted) == [
        "services/platform/queues.py (platform) imports services.movements.kinds (movements)"
    ]


def test_views_and_commands_run_no_queries_of_their_own() -> None:
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules("blueprints", "commands")
        for name in imports_of(path)
        if name in ("sqlalchemy", "sqlalchemy.orm") or name.startswith("sqlalchemy.sql")
    ]
    offenders += [
        f"{path.relative_to(ROOT)} builds a query"
        for path in _modules("blueprints", "commands")
        if re.search(r"\bselect\(|db\.session\.(add|query|scalars?|execute)\(", path.read_text())
    ]
    assert offenders == []


def test_no_test_imports_from_conftest() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in _modules("tests")
        if any(name.endswith("conftest") for name in imports_of(path))
    ]
    assert offenders == []


# Modules that only declare (columns, constants, protocols): nothing to test on their own.
DECLARATIVE = {
    "wsgi.py",  # app = create_app(): tests/test_app.py imports it
    "extensions.py",  # the extensions, unbound (bound by the factory)
    "models/admin_user.py",
    "models/base.py",  # db.Model, named for the type checker
    "models/customer.py",
    "models/ledger_entry.py",
    "models/order.py",
    "models/order_line.py",
    "models/outbox.py",
    "models/payment_transition.py",
    "models/processed_webhook.py",
    "models/product.py",
    "models/product_change.py",
    "models/provider_call.py",
    "models/provider_customer.py",
    "models/payment_block.py",
    "models/wallet.py",
    "providers/base.py",
    "providers/spec.py",
    "services/catalog/products.py",
    "services/payments/table.py",  # the payment's states as data (tests/services/movements)
    "services/platform/errors.py",
    "services/platform/queues.py",
    "sandbox/stripe/blueprint.py",  # the dialect's Blueprint, for its modules' routes
}


def test_tests_mirror_the_tree() -> None:
    """tests/<package>/test_<module>.py for every module with logic."""
    missing = []
    for path in _modules(*PRODUCT):
        relative = path.relative_to(ROOT)
        if path.name in ("__init__.py", "__main__.py") or str(relative) in DECLARATIVE:
            continue
        mirror = ROOT / "tests" / relative.parent / f"test_{path.name}"
        if not mirror.exists():
            missing.append(str(relative))
    assert missing == []


def test_the_product_reads_typed_settings_not_their_keys() -> None:
    """A key of the typed settings read by string anywhere but config.py and settings.py
    would bypass them (and miss a test's override)."""
    typed = set(re.findall(r'c\["([A-Z_]+)"\]', (ROOT / "settings.py").read_text()))
    key = re.compile(r"""config(?:\[|\.get\()["']([A-Z_]+)["']""")
    allowed = {ROOT / "config.py", ROOT / "settings.py"}
    offenders = [
        f"{path.relative_to(ROOT)} reads {name}"
        for path in _modules(*PRODUCT)
        if path not in allowed
        for name in key.findall(path.read_text())
        if name in typed
    ]
    assert len(typed) > 40 and offenders == []


def test_no_test_module_imports_another() -> None:
    """Shared steps live in the support modules (tests/helpers.py, *_support.py,
    factories.py, support.py), so a test module is never a library of another."""
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        for name in sorted(imports_of(path))
        if name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")
    ]
    assert offenders == []


MONEY_ROWS = re.compile(r"\b(Order|Payment|Refund|Dispute)\b")


def test_money_rows_are_locked_only_through_the_one_lock_order() -> None:
    """Issue 49 (g): a dispute was locked inline while locks.lock_dispute went unused. An
    order, payment, refund or dispute row is locked only by services/movements/locks.py
    (the lean statements of settling.py and intake.py lock in that order in SQL)."""
    lean = {
        "services/movements/locks.py",
        "services/payments/settling.py",
        "services/payments/intake.py",
    }
    offenders = []
    for path in _modules("services"):
        relative = str(path.relative_to(ROOT))
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if "with_for_update" not in line and "FOR UPDATE" not in line:
                continue
            statement = " ".join(lines[max(0, number - 3) : number + 1])
            if relative not in lean and MONEY_ROWS.search(statement):
                offenders.append(f"{relative}:{number + 1}")
    assert offenders == []


def test_a_charges_success_is_written_in_one_place() -> None:
    """A top-up's credit is posted only by the success's one statement
    (services/payments/settling.py), which every success of a payment takes: no module
    posts a TOPUP entry through the wallet's ledger."""
    posting = []
    for path in sorted((ROOT / "services").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and any(
                keyword.arg == "kind"
                and isinstance(keyword.value, ast.Attribute)
                and keyword.value.attr == "TOPUP"
                for keyword in node.keywords
            ):
                posting.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert posting == []


def _module_imports(path: Path) -> set[str]:
    """The modules a module imports, anywhere in it (`from a import b` names `a.b` when
    that is a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                inner = f"{node.module}.{alias.name}"
                is_module = (ROOT / (inner.replace(".", "/") + ".py")).exists()
                names.add(inner if is_module else node.module)
    return names


def import_circles(root: str) -> list[list[str]]:
    """The circles of imports among the modules under `root` (each found once)."""
    graph = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts): _module_imports(path)
        for path in _modules(root)
        if path.name != "__init__.py"
    }
    circles, done = [], set()

    def visit(module: str, trail: list[str]) -> None:
        for other in sorted(graph.get(module, ())):
            if other in trail:
                circle = trail[trail.index(other) :]
                if frozenset(circle) not in done:
                    done.add(frozenset(circle))
                    circles.append(circle)
            elif other in graph and len(trail) < 30:
                visit(other, [*trail, other])

    for module in sorted(graph):
        visit(module, [module])
    return circles


def test_the_sandbox_imports_no_circle() -> None:
    """A module of the sandbox never needs itself through another (its dialects' modules
    add routes to one blueprint each, a leaf)."""
    assert import_circles("sandbox") == []
