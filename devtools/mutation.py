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
from contextlib import ExitStack
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
GOAL_PERCENT = 85  # of the mutants that are not equivalent (docs/testing.md lists those)
# `mutmut results --all true` prints "    models.money.x_parse__mutmut_7: survived"
RESULT_LINE = re.compile(r"^\s*(?P<name>[\w.]+?)\.x\w*?__mutmut_\d+: (?P<status>.+)$")
KILLED = {"killed", "timeout", "caught by type check"}
# Survivors that behave exactly like the code (no test could tell them apart), each with
# why; docs/testing.md groups them. A change to a function renumbers its mutants: the
# summary lists entries that no longer survive, to be looked at again.
EQUIVALENT: dict[str, str] = {}


def mutmut(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).parent / "mutmut"), *args]
    return subprocess.run(command, cwd=PROJECT_DIR, env=env, text=True, capture_output=False)


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


def scores() -> dict[str, Counter[str]]:
    """Each mutated module's mutants by status, from mutmut's stored results."""
    listed = subprocess.run(
        [str(Path(sys.executable).parent / "mutmut"), "results", "--all", "true"],
        cwd=PROJECT_DIR,
        text=True,
        capture_output=True,
        check=True,
    ).stdout
    by_module: dict[str, Counter[str]] = defaultdict(Counter)
    for line in listed.splitlines():
        found = RESULT_LINE.match(line)
        if found:
            by_module[found["name"]][found["status"].strip()] += 1
    return by_module


def survivors() -> list[str]:
    listed = subprocess.run(
        [str(Path(sys.executable).parent / "mutmut"), "results"],
        cwd=PROJECT_DIR,
        text=True,
        capture_output=True,
        check=True,
    ).stdout
    return [
        line.split(":")[0].strip()
        for line in listed.splitlines()
        if line.rstrip().endswith(("survived", "no tests"))
    ]


def summary() -> bool:
    """Print the score of each module over its non-equivalent mutants (a survivor not
    in EQUIVALENT counts against it, and so does one no test reaches); True when every
    module reaches the goal."""
    left = survivors()
    equivalent = [name for name in left if name in EQUIVALENT]
    reached = True
    print(f"{'module':<32} {'mutants':>7} {'equivalent':>10} {'killed':>6} {'survived':>8} score")
    for module, counts in sorted(scores().items()):
        killed = sum(counts[status] for status in KILLED)
        same = sum(1 for name in equivalent if name.startswith(f"{module}.x"))
        survived = counts["survived"] + counts["no tests"] - same
        total = killed + survived
        score = 100 * killed / total if total else 0.0
        reached &= score >= GOAL_PERCENT
        print(f"{module:<32} {total + same:>7} {same:>10} {killed:>6} {survived:>8} {score:5.1f}%")
    real = [name for name in left if name not in EQUIVALENT]
    if real:
        print(f"\n{len(real)} survivors (`.venv/bin/mutmut show NAME` shows one):")
        print("\n".join(f"  {name}" for name in real))
    stale = sorted(set(EQUIVALENT) - set(equivalent))
    if stale:  # renumbered by a change to its function, or killed now: look again
        print(f"\n{len(stale)} listed as equivalent but not surviving now:")
        print("\n".join(f"  {name}" for name in stale))
    return reached


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--summary", action="store_true", help="only print the last run's")
    parser.add_argument("--only", nargs="+", default=[], help="mutant names again (globs)")
    arguments = parser.parse_args()
    if not arguments.summary:
        if not arguments.only:
            shutil.rmtree(PROJECT_DIR / "mutants", ignore_errors=True)
        run_mutants(arguments.only)
    return 0 if summary() else 1


if __name__ == "__main__":
    sys.exit(main())
