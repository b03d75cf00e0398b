"""`make mutation`: mutmut over the money-critical modules, with their tests, on the same
throwaway servers as `make test`, then each module's score and its survivors.

mutmut runs one short pytest session per mutant (forked from a warm process), so the
servers are started here once and handed to every session through TEST_DATABASE_URL,
REDIS_URL and TEST_SANDBOX_URL (tests/conftest.py). The modules and their tests are
[tool.mutmut] in pyproject.toml. Mutants run one at a time: every test empties the one
database and Redis they share. Each run starts from a new mutants/ (mutmut's own reuse
of an old one missed modules added to the list); the results stay there afterwards.

    python -m devtools.mutation                      # run, then print the summary
    python -m devtools.mutation --summary            # the summary of the last run only
    python -m devtools.mutation --only models.money  # run some mutants again (a glob)
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
GOAL_PERCENT = 85  # of the mutants that are not equivalent (docs/testing.md lists those)
# The books an auditor signs are held higher (docs/books.md).
GOALS = {"services.books.": 90, "services.statements.": 90, "providers.stripe.balance": 90}
GOALS["providers.braintree.balance"] = 90


def goal_of(module: str) -> int:
    return next((g for prefix, g in GOALS.items() if module.startswith(prefix)), GOAL_PERCENT)


# `mutmut results --all true` prints "    models.money.x_parse__mutmut_7: survived"
RESULT_LINE = re.compile(r"^\s*(?P<name>[\w.]+\.x\w*__mutmut_\d+): (?P<status>.+)$")
KILLED = {"killed", "timeout", "caught by type check"}
LEFT = ("survived", "no tests")  # not killed: a survivor unless it is equivalent
# Survivors that behave exactly like the code (no test could tell them apart), each with
# why; docs/testing.md groups them. A change to a function renumbers its mutants: the
# summary lists entries that no longer survive, to be looked at again.
_SELECT_NONE = "SELECT FROM ... FOR UPDATE (no column) locks the same row in PostgreSQL"
_TOKEN = "a random token's length"
_OPEN_UNTIL = "the scripts never write an open state without its open_until"
_BYTES = "the breaker's Redis client answers bytes (no decode_responses)"
_SAME_ID = "a persistent wallet's identity is its id: either way gives the same number"
_UNREACHABLE = "a line no execution reaches (see below)"
_SAME_LOCK = "the order's id is given, so the payment's is not read (or is read to the same id)"
_UNCHANGED = "services.webhooks.unchanged.x_"
_UNCHANGED = "services.webhooks.unchanged.x_"
EQUIVALENT: dict[str, str] = {
    # A batch's webhook events that change nothing (services/webhooks/unchanged.py).
    **dict.fromkeys(
        [f"{_UNCHANGED}_changes_nothing__mutmut_{n}" for n in (16, 28, 29)],
        "the noun is only in the mismatch's text, which this path does not keep",
    ),
    f"{_UNCHANGED}_changes_nothing__mutmut_3": "only payment outcomes get there: never None",
    **dict.fromkeys(
        [f"{_UNCHANGED}_is_payment_outcome__mutmut_{n}" for n in (1, 2, 3)],
        "an event with no outcome is parsed with no provider id (providers/*/webhooks.py), "
        "so it names no payment and is left either way; refunds never get here (batches.py)",
    ),
    # The journal (services/books/journal.py).
    **dict.fromkeys(
        [f"services.books.journal.x_post_many__mutmut_{n}" for n in (22, 50, 51)],
        "the entry's created_at has the model's default (utcnow), which fills it alike",
    ),
    "services.books.journal.x_post_many__mutmut_36": (
        "the journal's one UNIQUE constraint is (source_kind, source_id, step): ON CONFLICT "
        "with no target does nothing on the same conflicts"
    ),
    "services.books.journal.x_entries_of__mutmut_5": (
        "an entry's postings are inserted after it, so ordering by posting id alone keeps "
        "each entry's postings in its order"
    ),
    # The lean charge (services/payments/settling.py).
    **dict.fromkeys(
        [f"services.payments.settling.x_settle__mutmut_{n}" for n in (2, 14, 15)],
        "the noun is only in the mismatch's text, which the lean path does not keep",
    ),
    **dict.fromkeys(
        [f"services.payments.settling.x_settle__mutmut_{n}" for n in (4, 5)],
        "the ids' check is made again by the settle statement (the held provider id NULL "
        "or the answer's), so a mismatch of ids applies nothing either way",
    ),
    **dict.fromkeys(
        [f"services.payments.settling.x_settle__mutmut_{n}" for n in (21, 27, 28)],
        "unreachable: the gateway records one call per call it made, and every payment is "
        "an order's or a top-up",
    ),
    "services.payments.settling.x_settle__mutmut_54": (
        "the reason is 'provider payment ' and an id of at most 255 characters"
    ),
    "models.money.x__meant__mutmut_22": (
        "Babel's suggestions are the same digits regrouped (skipped), then at most one other "
        "reading: nothing follows the one that is tried"
    ),
    "services.movements.effects.x_held_by_topup__mutmut_31": "`or 0` reads NULL as 0",
    "services.movements.effects.x_held_by_topup__mutmut_33": "`or 0` reads NULL as 0",
    "services.movements.locks.x_lock_order_of__mutmut_10": _SELECT_NONE,
    "services.movements.locks.x_lock_refund__mutmut_14": _SELECT_NONE,
    "services.movements.locks.x_lock_refund__mutmut_19": _SELECT_NONE,
    "services.movements.locks.x_locked_order__mutmut_1": (
        "WHERE id = NULL finds no order: None either way (one query more)"
    ),
    "services.movements.locks.x_lock_found_payment__mutmut_2": _SAME_LOCK,
    "services.movements.locks.x_lock_found_payment__mutmut_3": _SAME_LOCK,
    "services.movements.locks.x_lock_found_payment__mutmut_5": _SAME_LOCK,
    "services.movements.machine.x_step__mutmut_91": (
        "is_committed=None is as false as False: the line still waits for the commit"
    ),
    "services.movements.machine.x__was_reversed__mutmut_3": "scalar() reads the first row only",
    "services.movements.machine.x__was_reversed__mutmut_18": "scalar() reads the first row only",
    **{
        f"resilience.breaker.xǁCircuitBreakerǁ{name}": why
        for name, why in {
            "allow__mutmut_2": _TOKEN,
            "allow__mutmut_3": _TOKEN,
            "record__mutmut_36": _TOKEN,
            "record__mutmut_37": _TOKEN,
            "allow__mutmut_9": "the allow script reads no fifth key",
            "record__mutmut_20": "the record script reads no fifth key",
            "allow__mutmut_32": "the allow script answers 0, -1 or a time, never 1",
            "record__mutmut_24": "the record script only asks whether the flag is '1'",
            "record__mutmut_26": "no probe's token (16 hex digits) is 'XXXX'",
            "snapshot__mutmut_38": "under a millisecond, and not the test clock's",
            "snapshot__mutmut_71": _OPEN_UNTIL,
            "snapshot__mutmut_73": _OPEN_UNTIL,
            "snapshot__mutmut_76": _OPEN_UNTIL,
            "snapshot__mutmut_86": "no clock reads before 1 ms: a missing lease is over either way",
        }.items()
    },
    "resilience.breaker.x__auth_failed__mutmut_4": "the value written has one space",
    "resilience.breaker.x__text__mutmut_2": _BYTES,
    "resilience.breaker.x__text__mutmut_3": _BYTES,
    "models.money.xǁInvalidAmountErrorǁsay__mutmut_11": (
        "a template without parameters has no '%': formatting it with {} changes nothing"
    ),
    "models.money.x__example__mutmut_7": "Babel prints no point for a pattern ending in one",
    "services.wallet.ledger.x_apply_movement__mutmut_15": (
        "the currency only checks the amount here: every allowed one has the same limit"
    ),
    "services.wallet.ledger.x__id_of__mutmut_1": _SAME_ID,
    "services.wallet.ledger.x__id_of__mutmut_3": _SAME_ID,
    "services.wallet.ledger.x__id_of__mutmut_4": _SAME_ID,
    # Unreachable: under READ COMMITTED an insert that meets another transaction's key
    # waits for it and then reads its row, so "being used right now" never happens; a
    # psycopg connection always has its driver connection.
    "services.wallet.ledger.x_apply_movement__mutmut_95": _UNREACHABLE,
    "services.wallet.ledger.x_apply_movement__mutmut_96": _UNREACHABLE,
    "services.wallet.ledger.x_apply_movement__mutmut_97": _UNREACHABLE,
    "services.wallet.ledger.xǁ_HotPathǁfor_session__mutmut_3": _UNREACHABLE,
    "services.wallet.ledger.xǁ_HotPathǁfor_session__mutmut_4": _UNREACHABLE,
    "services.wallet.ledger.xǁ_HotPathǁfor_session__mutmut_5": _UNREACHABLE,
    "services.payments.wallet_orders.x_pay_order_from_wallet__mutmut_63": (
        "None is the wallet's own currency, and the wallet was found by the order's currency"
    ),
}


def mutmut(
    *args: str, env: dict[str, str] | None = None, capture: bool = False
) -> subprocess.CompletedProcess[str]:
    """mutmut from this environment, in the project (its output captured when asked)."""
    command = [str(Path(sys.executable).parent / "mutmut"), *args]
    return subprocess.run(command, cwd=PROJECT_DIR, env=env, text=True, capture_output=capture)


def run_mutants(names: list[str]) -> int:
    from devtools.postgres import throwaway_postgres
    from devtools.servers import throwaway_redis
    from tests.sandbox_support import running_sandbox

    with ExitStack() as stack:
        sandbox_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="mutation-"))
        env = dict(
            os.environ,
            TEST_DATABASE_URL=stack.enter_context(throwaway_postgres()),
            REDIS_URL=stack.enter_context(throwaway_redis()),
            TEST_SANDBOX_URL=stack.enter_context(running_sandbox(sandbox_dir)).url,
        )
        return mutmut("run", "--max-children", "1", *names, env=env).returncode


@dataclass(frozen=True)
class Score:
    """One module's mutants: `equivalent` survivors are left out of its score."""

    module: str
    mutants: int
    equivalent: int
    killed: int
    survived: int  # not killed and not equivalent (no test reached it, or none failed)

    @property
    def percent(self) -> float:
        counted = self.killed + self.survived
        return 100 * self.killed / counted if counted else 0.0


def parse_results(listed: str) -> dict[str, str]:
    """Each mutant's status from `mutmut results --all true`."""
    return {
        found["name"]: found["status"].strip()
        for found in map(RESULT_LINE.match, listed.splitlines())
        if found
    }


def module_of(mutant: str) -> str:
    """models.money.x_parse__mutmut_7 -> models.money (a method: xǁMoneyǁ...)."""
    return mutant.rsplit(".x", 1)[0]


def score(statuses: dict[str, str], equivalent: Mapping[str, str]) -> list[Score]:
    """Every module's score, by name. A mutant no test reaches counts as a survivor."""
    tally: dict[str, Counter[str]] = defaultdict(Counter)
    for name, status in statuses.items():
        is_left = status in LEFT
        kind = "killed" if status in KILLED else "survived" if is_left else "other"
        if is_left and name in equivalent:
            kind = "equivalent"
        tally[module_of(name)][kind] += 1
    return [
        Score(module, sum(c.values()), c["equivalent"], c["killed"], c["survived"])
        for module, c in sorted(tally.items())
    ]


def summary() -> bool:
    """Print every module's score and the survivors; True when each reaches the goal."""
    listed = mutmut("results", "--all", "true", capture=True)
    listed.check_returncode()
    statuses = parse_results(listed.stdout)
    scores = score(statuses, EQUIVALENT)
    print(f"{'module':<32} {'mutants':>7} {'equivalent':>10} {'killed':>6} {'survived':>8} score")
    for row in scores:
        print(
            f"{row.module:<32} {row.mutants:>7} {row.equivalent:>10} {row.killed:>6} "
            f"{row.survived:>8} {row.percent:5.1f}%"
        )
    left = [n for n, s in statuses.items() if s in LEFT and n not in EQUIVALENT]
    if left:
        print(f"\n{len(left)} survivors (`.venv/bin/mutmut show NAME` shows one):")
        print("\n".join(f"  {name}" for name in left))
    stale = sorted(n for n in EQUIVALENT if statuses.get(n) not in LEFT)
    if stale:  # renumbered by a change to its function, or killed now: look again
        print(f"\n{len(stale)} listed as equivalent but not surviving now:")
        print("\n".join(f"  {name}" for name in stale))
    return all(row.percent >= goal_of(row.module) for row in scores)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--summary", action="store_true", help="only print the last run's")
    parser.add_argument("--only", nargs="+", default=[], help="mutant names again (globs)")
    arguments = parser.parse_args()
    if not arguments.summary:
        if not arguments.only:
            shutil.rmtree(PROJECT_DIR / "mutants", ignore_errors=True)
        failed = run_mutants(arguments.only)
        if failed:  # no clean run (a failing test, a server): the results would be old
            return failed
    return 0 if summary() else 1


if __name__ == "__main__":
    sys.exit(main())
