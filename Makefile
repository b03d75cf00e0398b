# The two commands: `make run` (the whole system on embedded defaults) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# axe-core for the browser tests (tests/browser/conftest.py reads the version here)
AXE_VERSION := 4.14.1
AXE := $(VENV)/axe-core-$(AXE_VERSION).min.js

.PHONY: run test lint bench mutation clean messages system-packages fuzz

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is required" if sys.version_info < (3, 11) else 0)'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/python -m devtools.run

# Two processes, each with its own throwaway PostgreSQL, Redis, sandbox and mail sink;
# a file's tests stay together. TEST_WORKERS=0 runs them in this process, as it must
# when TEST_DATABASE_URL or REDIS_URL names one shared server (the processes would
# empty each other's tables).
TEST_WORKERS ?= $(if $(TEST_DATABASE_URL)$(REDIS_URL),0,2)
# The API contract's stateful run alone, after the rest: beside the whole-stack drills it
# took another path on some runs ("0 paid orders"), a cause not found yet.
CONTRACT = tests/blueprints/test_api_contract.py
test: $(STAMP) system-packages $(AXE)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --ignore=$(CONTRACT) $(PYTEST_ARGS)
	$(BIN)/python -m pytest -n 0 $(CONTRACT)

# The API contract's fuzz run at ten times `make test`'s budget (schemathesis, every
# check, the stateful phase; tests/blueprints/test_api_contract.py). A few minutes.
fuzz: $(STAMP)
	FUZZ_EXAMPLES=400 $(BIN)/python -m pytest -n 0 tests/blueprints/test_api_contract.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .

# What the tests use from Debian, installed once when missing (as root, with apt-get):
# headless Chromium for the browser tests, promtool for the alert rules' tests, nginx for
# the production web tier's tests (deploy/nginx), pg_auto_failover for the database
# failover drill (python -m bench.cluster --database-failover). Never inside a test:
# without them those tests and drills skip and say what is missing.
SYSTEM_PACKAGES := $(if $(wildcard /usr/bin/chromium),,chromium) \
	$(if $(wildcard /usr/bin/chromedriver),,chromium-driver) \
	$(if $(shell command -v promtool),,prometheus) \
	$(if $(wildcard /usr/sbin/nginx),,nginx) \
	$(if $(wildcard /usr/bin/pg_autoctl),,postgresql-15-auto-failover)
system-packages:
	@if [ -n "$(strip $(SYSTEM_PACKAGES))" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian's $(strip $(SYSTEM_PACKAGES)) for the tests"; \
	    (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	      $(SYSTEM_PACKAGES)) >/dev/null || echo "could not install them: those tests skip"; \
	  else echo "$(strip $(SYSTEM_PACKAGES)) missing (not root with apt-get): those tests skip"; fi; \
	fi

# axe-core, the accessibility engine of the browser tests, from the npm registry
# (pinned in AXE_VERSION above). `make clean` removes it.
$(AXE): | $(STAMP)
	@tmp=$$(mktemp -d); \
	if command -v npm >/dev/null && npm pack axe-core@$(AXE_VERSION) --pack-destination $$tmp --silent >/dev/null \
	  && tar -xzf $$tmp/axe-core-$(AXE_VERSION).tgz -C $$tmp package/axe.min.js; then \
	  mv $$tmp/package/axe.min.js $@; \
	else echo "could not fetch axe-core $(AXE_VERSION) with npm: the accessibility tests skip"; fi; \
	rm -rf $$tmp

# Mutation testing of the money-critical modules (mutmut; [tool.mutmut] in pyproject.toml
# lists them and their tests). About half an hour: run before a release, not in CI. Prints
# each module's score and its survivors; fails below 85% (docs/testing.md).
mutation: $(STAMP)
	$(BIN)/python -m devtools.mutation

# Translations (docs/i18n.md): extract the messages, update the catalogs, compile them.
messages: $(STAMP)
	$(BIN)/pybabel extract -F babel.cfg -k N_ -k _ --no-location --sort-output --omit-header -o translations/messages.pot .
	$(BIN)/pybabel update -i translations/messages.pot -d translations -D messages --no-fuzzy-matching --ignore-obsolete
	$(BIN)/pybabel compile -d translations -D messages

# Every benchmark and the drills (about 25 minutes; results in bench/results/).
# Benchmarks and drills run on a throwaway PostgreSQL (or BENCH_DATABASE_URL /
# DRILL_DATABASE_URL).
bench: $(STAMP)
	$(BIN)/python -m bench.wallet_debits
	$(BIN)/python -m bench.breaker
	$(BIN)/python -m bench.dashboard
	$(BIN)/python -m bench.intake
	$(BIN)/python -m bench.checkout_page
	$(BIN)/python -m bench.webhooks
	$(BIN)/python -m bench.history_growth --explain docs/history-explain.md
	$(BIN)/python -m bench.reconcile_drain
	$(BIN)/python -m bench.books_reconcile
	$(BIN)/python -m bench.settle
	$(BIN)/python -m bench.drills outage
	$(BIN)/python -m bench.drills chaos
	$(BIN)/python -m bench.cluster  # root: hosts in network namespaces; skipped otherwise
	$(BIN)/python -m bench.cluster --database-failover  # root and Debian's pg_auto_failover

clean:
	rm -rf $(VENV) instance mutants .pytest_cache .mypy_cache .ruff_cache
