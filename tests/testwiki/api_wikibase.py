"""``action=wbgetentities`` for items, properties and MediaInfo (M-ids).

Entities are served with the page metadata Wikibase adds (``pageid``, ``ns``,
``title``, ``lastrevid``, ``modified``).  MediaInfo uses ``statements``;
items and properties use ``claims``.  A file without structured data answers
``{"id": "M123", "missing": ""}`` like Commons.  A merged item (a redirect, see
:mod:`.redirects`) is answered as Wikibase answers it: the target's entity under the id
asked, with ``redirects: {from, to}``.
"""
from __future__ import annotations

import re
from typing import Any

from .apibase import ApiError, Ctx, wikibase_error
from .model import Page, split_title
from .redirects import redirect_target, resolve
from .siteinfo import WIKIID

ENTITY_ID = re.compile(r'^(?:[QPL][1-9]\d*|M[1-9]\d*)$')
_ALL_PROPS = ('info', 'sitelinks', 'aliases', 'labels', 'descriptions',
              'claims', 'datatype')


def normalize_id(raw: str) -> str:
    """Upper-case entity prefix (Wikibase accepts ``q42``)."""
    return raw.strip()[:1].upper() + raw.strip()[1:]


def entity_json(ctx: Ctx, page: Page, data: dict[str, Any],
                props: set[str] | None = None,
                languages: set[str] | None = None) -> dict[str, Any]:
    """Entity JSON with page metadata, filtered by ``props``/``languages``."""
    props = props or set(_ALL_PROPS)
    out: dict[str, Any] = {}
    if 'info' in props:
        out.update(pageid=page.pageid, ns=page.ns, title=page.title,
                   lastrevid=page.latest.revid, modified=page.latest.timestamp)
    out['type'] = data.get('type', 'item')
    out['id'] = data['id']
    if 'datatype' in props and 'datatype' in data:
        out['datatype'] = data['datatype']
    for key in ('labels', 'descriptions', 'aliases'):
        if key in props and key in data:
            value = data[key]
            if languages:
                value = {lang: v for lang, v in value.items() if lang in languages}
            out[key] = value
    statements_key = 'statements' if out['type'] == 'mediainfo' else 'claims'
    if 'claims' in props:
        out[statements_key] = data.get(statements_key, {})
    if 'sitelinks' in props and out['type'] == 'item':
        out['sitelinks'] = data.get('sitelinks', {})
    return out


# Pages of the client wikis (which this server does not hold) that redirect to a page an
# item links to: Wikibase follows them for wbgetentities&sites=…&titles=… unless
# redirects=no, and answers the item under its own sitelink title.
CLIENT_REDIRECTS: dict[tuple[str, str], str] = {
    ('enwiki', 'Tour Eiffel'): 'Eiffel Tower',
    ('enwiki', 'Night Watch (painting)'): 'The Night Watch',
}

# (store, its revision counter when built, {(site, normalised title): entity id}).
_SITELINKS: dict[int, tuple[Any, int, dict[tuple[str, str], str]]] = {}


def sitelink_index(store: Any) -> dict[tuple[str, str], str]:
    """{(site, title): entity id} of every item's sitelinks, titles normalised like the
    wiki's.  Rebuilt when any page got a revision (an entity edit adds one), so a
    request for 50 titles reads the entities once, not 50 times."""
    with store.lock:
        version = store._next_revid  # moves with every revision
        cached = _SITELINKS.get(id(store))
        if cached is not None and cached[0] is store and cached[1] == version:
            return cached[2]
        index: dict[tuple[str, str], str] = {}
        for eid in list(store.entity_pages):
            page = store.entity_page(eid)
            data = store.entity_data(page) if page else None
            for site, link in (data or {}).get('sitelinks', {}).items():
                try:
                    index.setdefault((site, split_title(link['title'])[1]), eid)
                except ValueError:
                    continue
        _SITELINKS[id(store)] = (store, version, index)
        return index


def _by_sitelink(ctx: Ctx, site: str, title: str) -> tuple[str, Page | None]:
    """Resolve (site, title) to an entity id and its page."""
    store = ctx.wiki.store
    try:
        _, full = split_title(title)
    except ValueError:
        return '', None
    if site == WIKIID:
        page = store.page(full)
        if page is not None and page.ns == 6:
            return f'M{page.pageid}', page
    index = sitelink_index(store)
    eid = index.get((site, full), '')
    if not eid and ctx.get('redirects', 'yes') != 'no' and (site, full) in CLIENT_REDIRECTS:
        eid = index.get((site, CLIENT_REDIRECTS[(site, full)]), '')
    return (eid, store.entity_page(eid)) if eid else ('', None)


def wbgetentities(ctx: Ctx) -> dict[str, Any]:
    """Answer ``action=wbgetentities``."""
    store = ctx.wiki.store
    props = set(ctx.multi('props')) if 'props' in ctx.params else set(_ALL_PROPS)
    if ctx.get('props') == '':
        props = set()
    languages = set(ctx.multi('languages')) or None
    entities: dict[str, Any] = {}
    ids = [normalize_id(i) for i in ctx.multi('ids')]
    sites, titles = ctx.multi('sites'), ctx.multi('titles')
    if not ids and not (sites and titles):
        raise wikibase_error('param-missing', 'Either provide the item "ids" '
                             'or pairs of "sites" and "titles" for '
                             'corresponding pages', 'wikibase-api-param-missing')
    if titles and len(sites) != 1 and len(sites) != len(titles):
        raise wikibase_error('params-illegal', 'Must request one site, one '
                             'title, or an equal number of sites and titles',
                             'wikibase-api-params-illegal')
    fake = -1
    for i, title in enumerate(titles):
        site = sites[0] if len(sites) == 1 else sites[i]
        eid, page = _by_sitelink(ctx, site, title)
        if not eid:
            entities[str(fake)] = {'site': site, 'title': title, 'missing': True}
            fake -= 1
        else:
            ids.append(eid)
    for eid in ids:
        if not ENTITY_ID.match(eid):
            raise ApiError('no-such-entity', f'Could not find an entity with '
                           f'the ID "{eid}".', id=eid, messages=[{
                               'name': 'wikibase-api-no-such-entity',
                               'parameters': [eid],
                               'html': {'*': 'Could not find such an entity.'}}])
        page = store.entity_page(eid)
        data = store.entity_data(page) if page else None
        target = redirect_target(data)
        if target:
            # A merged item (redirects.py, after GetEntities/ResultBuilder): the target
            # under the asked id, or missing with redirects=no.
            if ctx.get('redirects', 'yes') == 'no':
                entities[eid] = {'id': eid, 'missing': True}
                continue
            target, page, data = resolve(store, eid)
            if page is not None and data is not None:
                found = entity_json(ctx, page, data, props, languages)
                info = {k: found.pop(k) for k in ('pageid', 'ns', 'title', 'lastrevid',
                                                   'modified') if k in found}
                entities[eid] = {**info, 'redirects': {'from': eid, 'to': target}, **found}
                continue
        if page is None or data is None:
            entities[eid] = {'id': eid, 'missing': True}
            continue
        entities[eid] = entity_json(ctx, page, data, props, languages)
    return {'entities': entities, 'success': 1}
