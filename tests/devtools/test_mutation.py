"""`make mutation`'s scoring and its configuration (the run itself is too slow for the
suite: it is run before a release, docs/testing.md)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from devtools import mutation
from devtools.mutation import PROJECT_DIR, Score, module_of, parse_results, score

LISTED = """
    models.money.x_parse__mutmut_1: killed
    models.money.x_parse__mutmut_2: survived
    models.money.xǁMoneyǁ__post_init____mutmut_3: no tests
    models.money.x_format__mutmut_4: timeout
    services.wallet.ledger.x_debit__mutmut_1: survived
    services.wallet.ledger.x_debit__mutmut_2: not checked
"""


def test_results_are_read_by_mutant() -> None:
    statuses = parse_results(LISTED)
    assert statuses["models.money.xǁMoneyǁ__post_init____mutmut_3"] == "no tests"
    assert statuses["services.wallet.ledger.x_debit__mutmut_2"] == "not checked"
    assert len(statuses) == 6
    assert module_of("models.money.xǁMoneyǁ__post_init____mutmut_3") == "models.money"


def test_a_score_leaves_out_only_the_equivalent_survivors() -> None:
    equivalent = {
        "models.money.x_parse__mutmut_2": "behaves like the code",
        "models.money.x_parse__mutmut_1": "listed, but killed: counts as killed",
    }
    money, ledger = score(parse_results(LISTED), equivalent)
    assert money == Score("models.money", mutants=4, equivalent=1, killed=2, survived=1)
    assert round(money.percent, 1) == 66.7  # 2 of the 3 that could be told apart
    assert ledger == Score("services.wallet.ledger", 2, 0, 0, 1)
    assert ledger.percent == 0.0


def test_the_mutated_modules_and_their_tests_exist() -> None:
    config = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["tool"]["mutmut"]
    selected = set(config["pytest_add_cli_args_test_selection"])
    for path in selected:
        assert (PROJECT_DIR / path).exists(), path
    for module in config["only_mutate"]:
        source = Path(module)
        assert (PROJECT_DIR / source).is_file(), module
        mirrored = f"tests/{source.parent}/test_{source.name}"
        assert mirrored in selected, f"{module} is mutated without its tests ({mirrored})"


def test_the_books_are_held_to_ninety_percent_the_rest_to_the_goal() -> None:
    assert mutation.goal_of("services.statements.claims") == 90
    assert mutation.goal_of("providers.braintree.balance") == 90
    assert mutation.goal_of("services.payments.state") == mutation.GOAL_PERCENT == 85
