"""Withheld suggestions travel from the link stage into the queue, its counters and exports.

Real store (every configured backend), real tiny open_clip linker with random weights, the
real link stage (``pipeline.link_pending``); only the thumbnail download is an in-memory map.
"""

from __future__ import annotations

import io
import json
import re
from datetime import datetime, timezone
from typing import Dict, Mapping, Sequence

import pytest

pytest.importorskip("torch")

from tests.linker_support import image_bytes, tiny_settings  # noqa: E402
from tests.safety_support import LABELS, PEOPLE_QIDS  # noqa: E402
from wikivel_bot import pipeline  # noqa: E402
from wikivel_bot.core.evidence import Evidence  # noqa: E402
from wikivel_bot.core.review_rules import ReviewFilter  # noqa: E402
from wikivel_bot.core.safety import PEOPLE, SENSITIVE, TIED  # noqa: E402
from wikivel_bot.linker import create_linker  # noqa: E402
from wikivel_bot.linker.link import link_files, rules_from_settings  # noqa: E402
from wikivel_bot.queue.reviews import iter_review_files  # noqa: E402
from wikivel_bot.review.export import write_export  # noqa: E402
from wikivel_bot.review.session import ReviewSession  # noqa: E402
from wikivel_bot.review.terminal import render  # noqa: E402
from wikivel_bot.types import MediaFile, Upload  # noqa: E402

T0 = datetime(2024, 5, 1, 8, 0, tzinfo=timezone.utc)
# The files' own evidence as the resolver would give it: Curie's category on her photos.
CURIE = Evidence("category", "Category:Marie Curie", "Q7186")
EVIDENCE = {502: (CURIE,), 602: (CURIE,)}


class Thumbnails:
    def __init__(self, data: Mapping[str, bytes]) -> None:
        self.data = data

    def get_many(self, urls: Sequence[str]) -> Dict[str, object]:
        return {url: self.data[url] for url in urls}


@pytest.fixture(scope="module")
def linker(tmp_path_factory):
    found = create_linker("zero-shot", tiny_settings(batch_size=4))
    found.attach(LABELS, str(tmp_path_factory.mktemp("cache")))
    return found


def test_withheld_suggestions_are_stored_counted_and_exported(store, linker):
    thumbs = {}
    for page_id, description in ((501, "A quiet street"), (502, "Marie Curie in her laboratory")):
        title = f"File:Street {page_id}.jpg"
        store.enqueue([Upload(page_id=page_id, title=title, timestamp=T0, log_id=page_id)])
        url = f"https://upload.wikimedia.org/{page_id}.jpg"
        thumbs[url] = image_bytes(seed=page_id)
        store.mark_fetched(store.file_id_of(page_id), MediaFile(page_id=page_id, title=title, thumb_url=url,
                                                               description=description))
    rules = rules_from_settings(tiny_settings(top_k=len(LABELS.qids) + 10, min_score=-2.0, ancestor_margin=3.0))

    def link(files, rejected):
        return link_files(linker, files, rules=rules, rejected=rejected, evidence=EVIDENCE)

    counters = pipeline.link_pending(store, Thumbnails(thumbs), link, limit=10, worker="test")
    assert counters.linked == 2
    # Three people withheld on the first file, two on the second (its category is Curie's).
    assert counters.withheld[PEOPLE] == 5 and counters.withheld[SENSITIVE] == 10
    assert "15 suggestions withheld by the safety rules" in counters.lines()
    files = {f.page_id: f for f in iter_review_files(store, ReviewFilter())}
    # Counts by rule only: which people were withheld is not kept.
    assert files[501].withheld_by_rule() == {PEOPLE: 3, SENSITIVE: 5}
    assert files[502].withheld_by_rule() == {PEOPLE: 2, SENSITIVE: 5}
    assert "Q7186" in {c.qid for c in files[502].candidates}
    assert not PEOPLE_QIDS & {c.qid for c in files[501].candidates}

    out = io.StringIO()
    stats = write_export(iter_review_files(store, ReviewFilter()), "wikitext", out, lambda t: t,
                         datetime(2024, 5, 2, tzinfo=timezone.utc))
    assert stats.withheld == {PEOPLE: 5, SENSITIVE: 10}
    assert stats.withheld_line() == "withheld by the safety rules for these files: 5 named people, 10 sensitive classes"
    assert "safety rules withheld 15 suggestion(s) for these files (named person: 5, sensitive class: 10)" in out.getvalue()
    jsonl = io.StringIO()
    assert write_export(iter_review_files(store, ReviewFilter()), "jsonl", jsonl, lambda t: t,
                        datetime(2024, 5, 2, tzinfo=timezone.utc)).withheld == {PEOPLE: 5, SENSITIVE: 10}
    curie = [json.loads(line) for line in jsonl.getvalue().splitlines() if '"Q7186"' in line]
    assert curie and curie[0]["notes"][0].startswith(f"{TIED}: Category:Marie Curie → Q7186")
    # The terminal review shows the counts of the file under review.
    session = ReviewSession(store, "Ann")
    session.start()
    assert session.current.file.page_id == 501
    screen = render(session, width=200)
    assert "withheld:    3 named people, 5 sensitive classes (safety rules)" in screen


def test_no_withheld_item_reaches_the_database_an_export_or_the_web_api(store, linker):
    """Which items were withheld ("this photo shows person X") is kept nowhere: not in any
    table, not in any export format, not in any answer of the JSON API."""
    from sqlalchemy import select

    from tests.web_support import SECRETS
    from wikivel_bot.config import Settings
    from wikivel_bot.queue.tables import metadata
    from wikivel_bot.web.app import create_app

    thumbs = {}
    for page_id, description in ((601, "A quiet street"), (602, "Marie Curie in her laboratory")):
        title = f"File:Street {page_id}.jpg"
        store.enqueue([Upload(page_id=page_id, title=title, timestamp=T0, log_id=page_id)])
        url = f"https://upload.wikimedia.org/{page_id}.jpg"
        thumbs[url] = image_bytes(seed=page_id)
        store.mark_fetched(store.file_id_of(page_id), MediaFile(page_id=page_id, title=title, thumb_url=url,
                                                               description=description))
    rules = rules_from_settings(tiny_settings(top_k=len(LABELS.qids) + 10, min_score=-2.0, ancestor_margin=3.0))
    outcomes = []

    def link(files, rejected):
        found = link_files(linker, files, rules=rules, rejected=rejected, evidence=EVIDENCE)
        outcomes.extend(found)
        return found

    pipeline.link_pending(store, Thumbnails(thumbs), link, limit=10, worker="test")
    withheld = {w.qid for o in outcomes for w in o.ranking.withheld}
    suggested = {c.qid for o in outcomes for c in o.candidates}
    never = withheld - suggested  # Curie is withheld on one file and suggested on the other
    assert {"Q76", "Q5582"} <= never and len(never) >= 5

    with store.engine.connect() as conn:
        database = json.dumps([[list(map(str, row)) for row in conn.execute(select(table))]
                               for table in metadata.sorted_tables])
    exported = ""
    for fmt in ("csv", "jsonl", "quickstatements", "wikitext"):
        out = io.StringIO()
        write_export(iter_review_files(store, ReviewFilter()), fmt, out, lambda t: t,
                     datetime(2024, 5, 2, tzinfo=timezone.utc))
        exported += out.getvalue()
    client = create_app(Settings(), store, secrets=SECRETS, items=None, labels=LABELS).test_client()
    api = "".join(client.get(path, query_string={"state": "all"}).get_data(as_text=True)
                  for path in ("/api/queue", "/api/files/M601", "/api/files/M602", "/api/stats"))
    page = client.get("/review?file=M601").get_data(as_text=True)
    assert "Q146" in database or "Q144" in database  # the dump is of the real rows
    for qid in sorted(never):
        for where, text in (("database", database), ("export", exported), ("API", api), ("review page", page)):
            assert not re.search(rf"\b{qid}\b", text), (qid, where)
    assert json.loads(client.get("/api/files/M601").get_data(as_text=True))["withheld"]["named person"] == 3
