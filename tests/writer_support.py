"""Fixtures and helpers for the writer and revert tests.

Real pywikibot over real HTTP against the local test wiki (``tests/testwiki``), one fresh
wiki per test (start-up ≈ 0.3 s) because these tests change entities; the queue is a SQLite
file whose clock the test moves (``clock.advance``) so retry times come without waiting.
Import the fixtures you use (``from tests.writer_support import wiki, site, queue, clock``).
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

import pytest

if "pywikibot" not in sys.modules:
    # pywikibot picks its directory at import, and takes PYWIKIBOT_DIR only when it holds a
    # user-config.py (else the working directory, i.e. the checkout).
    _PWB_DIR = tempfile.mkdtemp(prefix="pwb-writer-")
    Path(_PWB_DIR, "user-config.py").write_text("# empty: the tests configure pywikibot at runtime\n")
    os.environ.setdefault("PYWIKIBOT_DIR", _PWB_DIR)
    os.environ.setdefault("PYWIKIBOT_NO_USER_CONFIG", "2")

from sqlalchemy import select  # noqa: E402

from tests.testwiki import TestWiki  # noqa: E402
from wikivel_bot.queue import migrate  # noqa: E402
from wikivel_bot.queue.engine import create_engine_for  # noqa: E402
from wikivel_bot.queue.store import Store  # noqa: E402
from wikivel_bot.queue.tables import candidates, edits, files  # noqa: E402
from wikivel_bot.types import Candidate, DecisionAction, FileState, MediaFile, Upload  # noqa: E402

FIXTURE_FILES = Path(__file__).resolve().parent / "testwiki" / "fixtures" / "files"
REVIEWER = "Patroller Pat"
# One directory for the family files of every test's wiki: pywikibot imports a family file
# by module name from sys.path, so a second directory would still find the first one's
# commons_family.py (with the port of a stopped wiki).
PYWIKIBOT_FAMILIES = Path(tempfile.mkdtemp(prefix="pwb-writer-families-"))
T0 = datetime(2024, 5, 2, 9, 0, 0)

# A small hierarchy for the "more specific item" rule: {item: {ancestor: hops}}.
HIERARCHY: Dict[str, Dict[str, int]] = {
    "Q146": {"Q39201": 1, "Q7377": 1, "Q729": 2},  # house cat → pet/mammal → animal
    "Q144": {"Q39201": 1, "Q7377": 1, "Q729": 2},  # dog
    "Q3736439": {"Q5113": 1, "Q729": 2},  # duck → bird → animal
}


def ancestors_of(qid: str) -> Mapping[str, int]:
    return HIERARCHY.get(qid, {})


def fixture_titles() -> Dict[int, str]:
    """{page id: "File:Title"} of every fixture file."""
    out = {}
    for meta in FIXTURE_FILES.glob("*.json"):
        if meta.name.endswith(".mediainfo.json"):
            continue
        data = json.loads(meta.read_text(encoding="utf-8"))
        out[int(data["pageid"])] = "File:" + meta.name[: -len(".json")].replace("_", " ")
    return out


TITLES = fixture_titles()


@dataclass
class Clock:
    """The queue's clock (naive UTC), moved by hand."""

    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def wiki() -> Iterator[TestWiki]:
    """A fresh local test wiki with the bundled fixtures."""
    with TestWiki.start() as server:
        yield server


@pytest.fixture
def strict_baserevid(wiki: TestWiki) -> TestWiki:
    """The wiki answers ``editconflict`` to every write with a stale ``baserevid``.

    By default the test wiki behaves like Wikibase and patches a non-conflicting change
    made against a stale ``baserevid`` onto the latest revision (a resent new statement is
    added twice); tests that need the old strict refusal ask for this fixture.
    """
    wiki.strict_baserevid = True
    return wiki


@pytest.fixture
def site(wiki: TestWiki, tmp_path: Path) -> Iterator[Any]:
    """pywikibot's ``commons`` site on the test wiki, logged in as WikivelBot.

    pywikibot keeps its throttle file, cookies and caches in ``config.base_dir`` (the
    working directory when ``PYWIKIBOT_DIR`` holds no user-config.py): a directory per test
    keeps them out of the checkout, and keeps the throttle from counting the sites of earlier
    tests as other bot processes (it multiplies its delays by their number). Leaves
    ``simulate`` off afterwards whatever the test did.
    """
    from pywikibot import config

    from tests.testwiki.pwb import configure, unconfigure

    saved_base = config.base_dir
    config.base_dir = str(tmp_path / "pywikibot-data")
    Path(config.base_dir).mkdir()
    # Once it has a process number, pywikibot expects its throttle file to exist.
    (Path(config.base_dir) / "throttle.ctrl").touch()

    # The family file is rewritten with this wiki's port: drop the compiled old one, whose
    # timestamp and size may well match.
    shutil.rmtree(PYWIKIBOT_FAMILIES / "__pycache__", ignore_errors=True)
    # First on sys.path, so this directory's family files win over pywikibot's own
    # families/ directory, which pywikibot appends to sys.path whenever it loads all families
    # (Site(url=...), data_repository()). sys.path is restored afterwards, so neither
    # directory shadows the family files of later test modules.
    saved_path = list(sys.path)
    sys.path.insert(0, str(PYWIKIBOT_FAMILIES))
    importlib.invalidate_caches()
    site = configure(wiki, PYWIKIBOT_FAMILIES)
    assert site.family.domain == f"127.0.0.1:{wiki.port}", "pywikibot is on another wiki"
    site.login()
    yield site
    config.simulate = False
    unconfigure()
    sys.path[:] = saved_path
    importlib.invalidate_caches()
    config.base_dir = saved_base
    # pywikibot now has a process number, so later sites (other test modules) need the
    # throttle file in the directory they use.
    (Path(saved_base) / "throttle.ctrl").touch()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def queue(tmp_path: Path, clock: Clock) -> Iterator[Store]:
    """An empty, migrated queue on a SQLite file, on the test's clock."""
    engine = create_engine_for(f"sqlite:///{tmp_path / 'queue.sqlite'}")
    migrate.upgrade(engine)
    store = Store(engine, clock=clock)
    yield store
    store.close()


def queue_file(store: Store, page_id: int, qids: Sequence[str]) -> int:
    """Enqueue, fetch and link a fixture file with ``qids`` proposed; returns its row id."""
    title = TITLES[page_id]
    store.enqueue([Upload(page_id=page_id, title=title, timestamp=T0, mime="image/jpeg")])
    (work,) = [w for w in store.claim_files(FileState.DISCOVERED, 100, "test") if w.page_id == page_id]
    store.mark_fetched(work.id, MediaFile(page_id=page_id, title=title))
    store.claim_files(FileState.FETCHED, 100, "test")
    store.save_candidates(work.id, [
        Candidate(qid=q, score=0.9 - i / 10, rank=i + 1, linker="zero-shot", linker_version="1",
                  labelset_hash="h" * 16) for i, q in enumerate(qids)
    ])
    return work.id


def approve(store: Store, page_id: int, qid: str, prominent: bool = False,
            reviewer: str = REVIEWER, also: Sequence[str] = ()) -> None:
    """Queue a fixture file with ``qid`` (and ``also``) proposed, and approve ``qid``."""
    with store.engine.connect() as conn:
        known = conn.execute(select(files.c.id).where(files.c.page_id == page_id)).first()
    if known is None:
        queue_file(store, page_id, [qid, *also])
    action = DecisionAction.APPROVE_PROMINENT if prominent else DecisionAction.APPROVE
    store.record_decision(page_id, qid, action, reviewer, "cli")


def approve_all(store: Store, page_id: int, qids: Sequence[str], prominent: Sequence[str] = (),
                reviewer: str = REVIEWER) -> None:
    """Queue a fixture file with ``qids`` proposed and approve them all (``prominent`` ones
    as prominent): one file whose pairs the writer adds in one edit."""
    queue_file(store, page_id, qids)
    for qid in qids:
        action = DecisionAction.APPROVE_PROMINENT if qid in prominent else DecisionAction.APPROVE
        store.record_decision(page_id, qid, action, reviewer, "cli")


def bot_revisions(wiki: TestWiki, user: str = "WikivelBot") -> List[int]:
    """Revision ids of every edit the bot account made on the wiki (reverts included)."""
    return [e.new_revid for e in wiki.edits if e.user == user]


def audited_revisions(store: Store) -> List[int]:
    """Distinct revision ids the audit trail holds for edits the bot made (written, reverted)."""
    return sorted({r["revid"] for r in edit_rows(store)
                   if r["outcome"] in ("written", "reverted") and r["revid"] is not None})


def states(store: Store) -> Dict[Tuple[int, str], str]:
    """{(page id, qid): candidate state}."""
    query = select(files.c.page_id, candidates.c.qid, candidates.c.state).join(
        files, files.c.id == candidates.c.file_id)
    with store.engine.connect() as conn:
        return {(r.page_id, r.qid): r.state for r in conn.execute(query)}


def edit_rows(store: Store) -> List[Dict[str, Any]]:
    """Every edits row with its file and item, oldest first."""
    query = (select(edits, files.c.page_id, candidates.c.qid)
             .join(candidates, candidates.c.id == edits.c.candidate_id)
             .join(files, files.c.id == candidates.c.file_id).order_by(edits.c.id))
    with store.engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(query)]


def depicts_on_wiki(wiki: TestWiki, page_id: int) -> List[Dict[str, Any]]:
    """The P180 statements of a file as the wiki stores them now."""
    entity = wiki.entity(f"M{page_id}") or {}
    statements = entity.get("statements") or {}
    return list(statements.get("P180", [])) if isinstance(statements, dict) else []


def targets(statements: Sequence[Mapping[str, Any]]) -> List[str]:
    return [s["mainsnak"]["datavalue"]["value"]["id"] for s in statements
            if s["mainsnak"].get("snaktype") == "value"]


def edits_of(wiki: TestWiki, page_id: int, action: Optional[str] = None) -> List[Any]:
    """Successful writes to one file recorded by the server."""
    return [e for e in wiki.edits if e.entity == f"M{page_id}" and (action is None or e.action == action)]


@dataclass
class Human:
    """Edits an entity directly in the wiki's store, as a person in the web UI would."""

    wiki: TestWiki
    name: str = "Human Editor"
    done: List[str] = field(default_factory=list)

    def change(self, page_id: int, change: Any) -> None:
        page = self.wiki.store.entity_page(f"M{page_id}")
        data = self.wiki.store.entity_data(page)
        change(data)
        self.wiki.store.set_entity(page, data, user=self.name, comment="manual edit")
        self.done.append(f"M{page_id}")


class FrozenTime:
    """The ``time`` module as pywikibot's throttle sees it, with its clock stopped: the put
    throttle's wait is then exactly ``writedelay`` after the last write, however long a loaded
    machine takes between a test's set-up and the writer's question (a test that asks for a
    wait must get one, whatever the load)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def freeze_throttle_clock(monkeypatch: pytest.MonkeyPatch) -> FrozenTime:
    """Stop the clock of ``pywikibot.throttle`` (only there) for the rest of the test."""
    import pywikibot.throttle

    frozen = FrozenTime(time.time())
    monkeypatch.setattr(pywikibot.throttle, "time", frozen)
    return frozen
