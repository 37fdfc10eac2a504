"""The uncertainty review order on the web grid (review.order = "uncertainty", docs/learning.md):
one item across many files, its pair nearest the boundary first, paged in that order, and the
page says which order is in use."""

from __future__ import annotations

import dataclasses
import re

import pytest

from tests.review_support import add_file
from wikivel_bot.config import ReviewSettings
from wikivel_bot.queue.store import Store

# Q146 proposed for four files (oldest first) at 0.95, 0.52, 0.3 and 0.6; file 5 has another item.
SCORES = [(1, 0.95), (2, 0.52), (3, 0.3), (4, 0.6)]


def _queue(store: Store) -> None:
    for page_id, score in SCORES:
        add_file(store, page_id, [("Q146", score, "house cat", ""), ("Q144", 0.5, "dog", "")], day=page_id)
    add_file(store, 5, [("Q5", 0.5, "human", "")], day=5)


def test_the_page_query_orders_and_pages_by_uncertainty(store: Store) -> None:
    from wikivel_bot.core.review_rules import ReviewFilter
    from wikivel_bot.queue.learning_queries import uncertain_queue_page
    from wikivel_bot.queue.web_queries import QueueQuery

    _queue(store)
    query = QueueQuery(ReviewFilter(), item="Q146")
    first, after = uncertain_queue_page(store, query, 0.5, limit=2)
    # |0.52-0.5| < |0.6-0.5| < |0.3-0.5| < |0.95-0.5|; the other items of a file do not count.
    assert [f.page_id for f in first] == [2, 4]
    assert after == store.file_id_of(4)
    rest, following = uncertain_queue_page(store, query, 0.5, after_id=after, limit=2)
    assert [f.page_id for f in rest] == [3, 1] and following is None
    # A file that left the window (decided meanwhile): the next page starts from the top again.
    again, _ = uncertain_queue_page(store, query, 0.5, after_id=10_000, limit=2)
    assert [f.page_id for f in again] == [2, 4]
    # Only the oldest `window` matching files are ordered: the newest two are not reached.
    windowed, _ = uncertain_queue_page(store, query, 0.5, limit=4, window=2)
    assert [f.page_id for f in windowed] == [2, 1]


@pytest.fixture(scope="module")
def webwiki():
    from tests.web_support import add_web_users
    from tests.testwiki import TestWiki

    with TestWiki.start() as wiki:
        add_web_users(wiki)
        yield wiki


def _files(page: str):
    return [int(m) for m in re.findall(r'data-file="M(\d+)"', page)]


def test_the_grid_follows_and_names_the_order(webwiki, tmp_path) -> None:
    from tests.db_support import open_store
    from tests.web_support import SECRETS, web_settings
    from wikivel_bot.queue import migrate
    from wikivel_bot.web.app import create_app

    store = open_store(f"sqlite:///{tmp_path / 'q.sqlite'}")
    migrate.upgrade(store.engine)
    _queue(store)
    pages = {}
    for order in ("queue", "uncertainty"):
        settings = dataclasses.replace(web_settings(webwiki), review=ReviewSettings(order=order))
        app = create_app(settings, store, secrets=SECRETS, items=True)
        app.testing = True
        pages[order] = (app.test_client(), app.test_client().get("/grid?item=Q146&limit=2").get_data(as_text=True))
    client, page = pages["queue"]
    assert _files(page) == [1, 2] and 'id="grid-order"' in page and "oldest first" in page
    client, page = pages["uncertainty"]
    assert _files(page) == [2, 4] and "nearest the decision threshold" in page
    # "More files" carries on in the same order.
    more = re.search(r'href="([^"]+)" id="more"', page)
    assert more is not None and more.group(1)
    nxt = client.get(more.group(1).replace("&amp;", "&")).get_data(as_text=True)
    assert _files(nxt) == [3, 1] and 'id="more"' not in nxt
    store.close()
