# The README's two commands: `make run` and `make test`. Both set themselves up on a fresh
# machine and are fast when nothing changed (they reinstall only when setup.cfg changed).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# What the daemon needs (the linker included) vs. everything the test suite exercises.
RUN_EXTRAS  := ml,web,postgres,mysql
TEST_EXTRAS := ml,train,dumps,web,backfill,postgres,mysql,dev
PYTEST_ARGS ?=
# pytest-xdist workers: one more than the cores, since much of the suite waits on the processes
# and HTTP servers it starts (2 cores: 6.1 min with 3 workers, 7.6 with 2, 12 in one process;
# docs/benchmarks.md). A module stays on one worker, the Ray modules share one, the slowest go
# first (tests/conftest.py). TEST_WORKERS=0 runs everything in this process.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))

.PHONY: install run test schema docs bench-queue clean-venv help

help:
	@echo "make install create $(VENV) and install the daemon (what make run needs), nothing else"
	@echo "make run     install into $(VENV), upgrade the SQLite queue, start the dry-run daemon"
	@echo "make test    install everything into $(VENV) and run the whole test suite"
	@echo "make schema  regenerate the schema snapshots in db/ from the migrations"
	@echo "make docs    regenerate docs/cli.md from the commands' help"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Stamp files record which extras were installed against which setup.cfg.
$(VENV)/.installed-run: setup.cfg pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[$(RUN_EXTRAS)]'
	touch $@

$(VENV)/.installed-test: setup.cfg pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[$(TEST_EXTRAS)]'
	touch $@ $(VENV)/.installed-run

# Only the installation: for the README's step-by-step recipe, which starts the test wiki
# from the virtualenv before the bot runs.
install: $(VENV)/.installed-run

# The dry-run daemon on the embedded SQLite default. Settings come from wikivel.toml or
# WIKIVEL_* variables, e.g. a local test wiki and random weights on an offline machine:
#   WIKIVEL_SITE_API_URL=http://127.0.0.1:8765/w/api.php make run RUN_ARGS="--weights random"
run: $(VENV)/.installed-run
	$(BIN)/wikivel-bot db upgrade
	$(BIN)/wikivel-bot run --dry-run $(RUN_ARGS)

# pytest exits 5 when it collected no tests; make treats every non-zero code as failure,
# so an empty run can never pass as green.
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

schema: $(VENV)/.installed-test
	$(BIN)/python -m wikivel_bot.queue.snapshot --write

docs: $(VENV)/.installed-test
	$(BIN)/python -m wikivel_bot.cli.docs --write

bench-queue: $(VENV)/.installed-test
	$(BIN)/python bench/queue.py

clean-venv:
	rm -rf $(VENV)
