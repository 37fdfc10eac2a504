"""Shared fixtures: queue databases on every backend (see tests/db_support.py)."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
from typing import Dict, Iterator

import pytest

from tests.db_support import BACKENDS, ScratchDatabase, open_store, queue_url
from wikivel_bot.queue import migrate
from wikivel_bot.queue.store import Store

# Tests never read the developer's own settings file or variables.
for _name in list(os.environ):
    if _name.startswith("WIKIVEL_") and not _name.startswith("WIKIVEL_TEST_"):
        del os.environ[_name]

# The bot's caches default to $XDG_CACHE_HOME/wikivel-bot: the session gets its own, so no
# test fills the developer's ~/.cache. Hugging Face's cache (weights downloaded once) stays
# where it was, pinned through HF_HOME before XDG_CACHE_HOME moves.
os.environ.setdefault("HF_HOME", os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"))
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="wikivel-cache-")

# A shell starts background jobs (`make test &`, nohup) with SIGINT ignored, and an ignored
# signal stays ignored across exec: the Ctrl-C tests' child processes would then never see
# their SIGINT and hang. Handled (not ignored) signals reset to the default on exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# pywikibot keeps caches, throttle files and cookies in its config directory, and uses the
# working directory when PYWIKIBOT_DIR has no user-config.py: give the whole session a
# private one so no test writes into the checkout or reads an operator's config.
if "pywikibot" not in sys.modules:
    _pwb_dir = tempfile.mkdtemp(prefix="wikivel-pwb-")
    with open(os.path.join(_pwb_dir, "user-config.py"), "w", encoding="utf-8") as _fh:
        _fh.write("# test session: pywikibot defaults, sites configured by the tests\n")
    os.environ["PYWIKIBOT_DIR"] = _pwb_dir
    os.environ.setdefault("PYWIKIBOT_NO_USER_CONFIG", "2")


@pytest.fixture(scope="session")
def _scratch_databases() -> Iterator[Dict[str, ScratchDatabase]]:
    scratch = {"postgresql": ScratchDatabase("postgresql"), "mysql": ScratchDatabase("mysql")}
    yield scratch
    for item in scratch.values():
        item.drop()


@pytest.fixture(params=BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path, _scratch_databases) -> str:
    """A URL of an empty queue database at the migration head, once per backend."""
    return queue_url(request.param, tmp_path, _scratch_databases)


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    """A Store on an empty, migrated queue database (every backend)."""
    s = open_store(db_url)
    if db_url.startswith("sqlite"):
        migrate.upgrade(s.engine)
    yield s
    s.close()


# -- running in parallel (pytest-xdist; `make test` runs `-n auto`) ------------------------------
#
# Each worker is its own session: its own scratch databases on the servers (db_support), its
# own test wikis on free ports, its own caches. What must not be split or run twice:
# * a module's tests stay on one worker, so a module-scoped fixture (a trained model, a
#   test wiki) is built once;
# * every module that runs Ray runs on one worker: two Ray clusters on two cores slow each
#   other down threefold;
# * the slowest modules are handed out first (longest first), so no worker is left with a
#   long module at the end while the other idles. Measured with `--durations=0` (docs/benchmarks.md,
#   "The test suite"); a module missing here only starts later, it still runs.
# pytest-xdist's own `--dist loadgroup` cannot do the second with pytest 9 (it renames test ids
# through an attribute pytest 9 no longer reads), so the scheduler below says what a unit is.
# (test_backfill_one_cpu starts a one-CPU Ray of its own: beside the other it would crawl too.)
RAY_MODULES = ("test_backfill.py", "test_backfill_imagedump.py", "test_one_linker.py", "test_backfill_one_cpu.py")
SLOWEST_FIRST = (
    "ray", "test_readme_journey.py", "test_daemon.py", "test_suggest_inputs.py",
    "test_cascade_learning.py", "test_operator_first_hour.py", "test_writer_follow_up.py", "test_web_browser.py",
    "test_daemon_stop.py", "test_poll_cli.py", "test_writer_frozen.py", "test_writer_no_resend.py",
    "test_writer_faults.py", "test_web_browser_evidence.py", "test_writer_cli.py", "test_writer.py",
    "test_cli_errors.py", "test_learning_bench.py", "test_linker_tower.py", "test_item_images.py",
    "test_typecheck.py",
)

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two workers on two cores: torch's own thread pool per worker (and per CLI process the
    # tests start, which inherit this) would oversubscribe the cores and spin.
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def work_unit_of(nodeid: str) -> str:
    """What one worker runs whole: "ray" for every test of the Ray modules, else the module."""
    module = nodeid.split("::", 1)[0]
    return "ray" if os.path.basename(module) in RAY_MODULES else module


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Units of work by :func:`work_unit_of`, handed out in collection order (slowest first)."""
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit_of(nodeid)

    config.option.loadscopereorder = False  # keep the order below, not "most tests first"
    return ModuleScheduling(config, log)  # type: ignore[arg-type]


def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    # The order must come from the workers' own collection (the controller schedules what
    # they report); in one process the collection order stays.
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank = {unit: number for number, unit in enumerate(SLOWEST_FIRST)}
    # A stable sort: modules keep their own order inside, the slowest units go out first.
    items.sort(key=lambda item: rank.get(os.path.basename(work_unit_of(item.nodeid)), len(rank)))
