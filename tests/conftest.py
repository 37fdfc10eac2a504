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
