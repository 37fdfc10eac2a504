"""The uncertainty review order (review.order = "uncertainty", docs/learning.md): the rule on
plain values, the terminal session and the web review page on a real queue, and `status`."""

from __future__ import annotations

import dataclasses

import pytest

from tests.review_support import add_file
from wikivel_bot.config import ReviewSettings
from wikivel_bot.core.review_order import file_uncertainty, next_in_order, uncertainty_order
from wikivel_bot.errors import ConfigError
from wikivel_bot.queue.store import Store
from wikivel_bot.review import ReviewSession

# (qid, score, label, description): files whose best suggestion is 0.95 sure, 0.52, 0.3.
SURE = [("Q146", 0.95, "house cat", ""), ("Q144", 0.05, "dog", "")]
DOUBT = [("Q146", 0.52, "house cat", ""), ("Q144", 0.9, "dog", "")]
MAYBE = [("Q5", 0.3, "human", "")]


def _queue(store: Store) -> None:
    add_file(store, 1, SURE, day=0)
    add_file(store, 2, DOUBT, day=1)
    add_file(store, 3, MAYBE, day=2)


def test_the_order_puts_the_boundary_first_and_walks_on() -> None:
    from wikivel_bot.core.review_rules import ReviewCandidate, ReviewFile
    from wikivel_bot.types import CandidateState

    def file(fid: int, *scores: float, probability: float = None) -> ReviewFile:
        cands = tuple(ReviewCandidate(candidate_id=fid * 10 + i, qid="Q1", score=s, rank=i, linker="x",
                                      state=CandidateState.PROPOSED, probability=probability)
                      for i, s in enumerate(scores))
        return ReviewFile(file_id=fid, page_id=fid, title=f"File:{fid}.jpg", uploader="", uploaded_at=None,
                          thumb_url="", description="", categories=(), depicts=(), candidates=cands)

    files = [file(1, 0.95, 0.05), file(2, 0.52), file(3, 0.3), file(4, 0.99, probability=0.49), file(5)]
    assert file_uncertainty(files[3], 0.5) == pytest.approx(0.01)     # the probability wins over the score
    ordered = uncertainty_order(files, 0.5)
    assert [f.file_id for f in ordered] == [4, 2, 3, 1, 5]           # no number at all: last
    assert next_in_order(ordered).file_id == 4
    assert next_in_order(ordered, after_id=2).file_id == 3
    assert next_in_order(ordered, after_id=99).file_id == 4          # a decided file left: from the top
    assert next_in_order(ordered, after_id=2, exclude=(3, 1)).file_id == 5
    assert next_in_order(ordered, after_id=5) is None


def test_an_unknown_order_fails_at_load() -> None:
    with pytest.raises(ConfigError, match="review.order: 'random' is not an order"):
        ReviewSettings(order="random")


def test_the_terminal_session_follows_the_uncertainty_order(store: Store) -> None:
    from wikivel_bot.types import DecisionAction

    _queue(store)
    queue = ReviewSession(store, "Bob")
    queue.start()
    assert queue.current.file.page_id == 1                  # today's order: oldest first
    session = ReviewSession(store, "Bob", order="uncertainty", threshold=0.5)
    session.start()
    assert session.current.file.page_id == 2                # 0.52: nearest the boundary
    session.skip_file()
    assert session.current.file.page_id == 3                # 0.3
    session.decide(DecisionAction.REJECT)
    assert session.current.file.page_id == 1                # 0.95 / 0.05; the skipped file is not shown again
    session.skip_file()
    assert session.finished


@pytest.fixture(scope="module")
def webwiki():
    from tests.web_support import add_web_users
    from tests.testwiki import TestWiki

    with TestWiki.start() as wiki:
        add_web_users(wiki)
        yield wiki


def test_the_review_page_follows_and_names_the_order(webwiki, tmp_path) -> None:
    from tests.db_support import open_store
    from tests.web_support import SECRETS, web_settings
    from wikivel_bot.queue import migrate
    from wikivel_bot.web.app import create_app

    store = open_store(f"sqlite:///{tmp_path / 'q.sqlite'}")
    migrate.upgrade(store.engine)
    _queue(store)
    for order, first, named in [("queue", "M1", "oldest first"), ("uncertainty", "M2", "nearest the decision threshold")]:
        settings = dataclasses.replace(web_settings(webwiki), review=ReviewSettings(order=order))
        app = create_app(settings, store, secrets=SECRETS, items=True)
        app.testing = True
        page = app.test_client().get("/review").get_data(as_text=True)
        assert f'data-file="{first}"' in page and named in page
    # Past the first file in the uncertainty order comes the next one in it.
    after = store.file_id_of(2)
    page = app.test_client().get(f"/review?after={after}").get_data(as_text=True)
    assert 'data-file="M3"' in page
    store.close()


def test_status_names_the_order_and_the_running_model(tmp_path, monkeypatch) -> None:
    from click.testing import CliRunner

    from wikivel_bot.cli import main

    url = f"sqlite:///{tmp_path / 'q.sqlite'}"
    monkeypatch.setenv("WIKIVEL_DB_URL", url)
    assert CliRunner().invoke(main, ["db", "upgrade"]).exit_code == 0
    plain = CliRunner().invoke(main, ["status"])
    assert plain.exit_code == 0 and "review order: queue (oldest first)" in plain.output
    monkeypatch.setenv("WIKIVEL_REVIEW_ORDER", "uncertainty")
    monkeypatch.setenv("WIKIVEL_LEARNING_MODELS_DIR", str(tmp_path / "models"))
    shown = CliRunner().invoke(main, ["status"])
    assert "review order: uncertainty (suggestions nearest the threshold 0.5 first)" in shown.output
    assert "learning: running linker.checkpoint (nothing promoted); scheduled rounds off" in shown.output
    doc = CliRunner().invoke(main, ["status", "--json"]).output
    assert '"review_order": "uncertainty"' in doc
