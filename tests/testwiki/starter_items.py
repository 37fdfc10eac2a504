"""The starter label set's items, for the standalone wiki of the offline recipe.

The offline recipe links with random weights over the starter label set the package ships
(``wikivel_bot/labels/data/starter_items.tsv``, ~300 real Wikidata items), so a reviewer
there may approve any of them; about half are not in the fixtures, and writing one would
fail with ``modification-failed: Q… not found`` where Wikidata, which has them all, would
take it. ``python -m tests.testwiki`` therefore adds the missing ones as plain items (English
label and description, the P31/P279 links the list gives among items the wiki then has).
``TestWiki.start()`` does not: the suites keep the fixture inventory they count on.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .make_fixtures import entity_value, statement

if TYPE_CHECKING:
    from .server import TestWiki

STARTER_ITEMS = (Path(__file__).resolve().parents[2] / 'wikivel_bot' / 'labels' / 'data'
                 / 'starter_items.tsv')


def read_rows(path: Path = STARTER_ITEMS) -> list[tuple[str, str, str, list[str], list[str]]]:
    """(qid, label, description, P31 targets, P279 targets) of each row of the list."""
    rows = []
    for line in path.read_text(encoding='utf-8').splitlines():
        if not line.startswith('Q'):
            continue  # comments and the header
        cells = line.split('\t') + [''] * 5
        qid, label, description, p31, p279 = (c.strip() for c in cells[:5])
        rows.append((qid, label, description,
                     [q.strip() for q in p31.split(',') if q.strip()],
                     [q.strip() for q in p279.split(',') if q.strip()]))
    return rows


def add_starter_items(wiki: TestWiki, path: Path = STARTER_ITEMS) -> int:
    """Add every item of the list the wiki lacks; return how many were added."""
    store = wiki.store
    rows = [row for row in read_rows(path) if store.entity_page(row[0]) is None]
    known = {row[0] for row in rows} | set(store.entity_pages)
    for qid, label, description, p31, p279 in rows:
        claims: dict[str, list[dict[str, Any]]] = {}
        for pid, targets in (('P31', p31), ('P279', p279)):
            kept = [statement(qid, pid, entity_value(t)) for t in targets if t in known]
            if kept:
                claims[pid] = kept
        store.add_entity({
            'type': 'item', 'id': qid,
            'labels': {'en': {'language': 'en', 'value': label}},
            'descriptions': {'en': {'language': 'en', 'value': description}} if description else {},
            'aliases': {}, 'claims': claims, 'sitelinks': {}})
    return len(rows)
