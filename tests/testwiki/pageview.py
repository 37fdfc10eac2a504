"""``index.php`` pages: a page view that shows a file's structured data, and
``Special:EntityData``.

Commons shows a file's MediaInfo under the file page's "Structured data" tab: the captions
(labels) and each property's statements, item values by their label and linked to the item.
The view here renders the same facts as plain HTML (every wiki value escaped), so a person or
a test looking at ``/wiki/File:…`` after the bot wrote sees *depicts: lighthouse* there.

``Special:EntityData/M123.json`` (also ``/w/index.php?title=Special:EntityData/M123.json``
and ``Special:EntityData?id=M123&format=json``) answers ``{"entities": {"M123": {…}}}`` with
the entity as ``wbgetentities`` serves it (page metadata, labels, statements), as Commons and
Wikidata do; an id that names no entity (or a file without structured data) is a 404, a
malformed one a 400, a format other than JSON a 415.
"""
from __future__ import annotations

import html
import json
import re
import urllib.parse
from typing import TYPE_CHECKING, Any

from .api_wikibase import ENTITY_ID, entity_json, normalize_id
from . import userscripts
from .redirects import resolve

if TYPE_CHECKING:
    from .model import Page
    from .server import TestWiki

Reply = tuple[int, dict[str, str], bytes]
ENTITY_DATA = 'Special:EntityData'
_HTML = 'text/html; charset=UTF-8'
_TARGET = re.compile(r'^(?P<id>[^./]+)(?:\.(?P<format>[a-z]+))?$', re.IGNORECASE)


def is_entity_data(title: str) -> bool:
    """Whether *title* (``Special:EntityData/M1.json``, any case of the prefix) is it."""
    head = title.replace('_', ' ').split('/', 1)[0]
    return head.lower() in ('special:entitydata', 'special:entity data')


def _error_page(status: int, message: str) -> Reply:
    body = (f'<!DOCTYPE html><html><head><title>Error - Wikivel Test Commons</title></head>'
            f'<body><p class="error">{html.escape(message)}</p></body></html>')
    return status, {'Content-Type': _HTML}, body.encode()


def entity_data(wiki: TestWiki, title: str, params: dict[str, str]) -> Reply:
    """Answer ``Special:EntityData/<id>[.json]`` (or ``?id=<id>&format=json``)."""
    target = title.split('/', 1)[1] if '/' in title else ''
    if not target and params.get('id'):
        target = params['id'] + ('.' + params['format'] if params.get('format') else '')
    found = _TARGET.match(target)
    if not found:
        return _error_page(400, 'Invalid ID: ' + target)
    eid, fmt = normalize_id(found.group('id')), (found.group('format') or 'json').lower()
    if not ENTITY_ID.match(eid):
        return _error_page(400, f'Invalid ID: {found.group("id")}')
    if fmt != 'json':
        return _error_page(415, f'Unsupported format: {fmt} (this test wiki serves .json)')
    # A merged item: its target, under the target's id (what a client gets after following
    # Wikibase's HTTP redirect to the target's EntityData).
    eid, page, data = resolve(wiki.store, eid)
    if page is None or data is None:
        return _error_page(404, f'No entity with ID {eid} was found.')
    # entity_json reads nothing from the API context: all props, all languages.
    entity = entity_json(None, page, data)  # type: ignore[arg-type]
    body = json.dumps({'entities': {eid: entity}}, ensure_ascii=False).encode('utf-8')
    return 200, {'Content-Type': 'application/json; charset=UTF-8',
                 'Access-Control-Allow-Origin': '*',
                 'Cache-Control': 'public, max-age=0'}, body


def _label(entity: dict[str, Any] | None, eid: str, lang: str = 'en') -> str:
    """The entity's label in *lang*, else in any language, else its id."""
    labels = (entity or {}).get('labels') or {}
    chosen = labels.get(lang) or next(iter(labels.values()), None)
    return str(chosen['value']) if chosen else eid


def _entity(wiki: TestWiki, eid: str) -> dict[str, Any] | None:
    page = wiki.store.entity_page(eid)
    return wiki.store.entity_data(page) if page is not None else None


def _value_html(wiki: TestWiki, snak: dict[str, Any]) -> tuple[str, str]:
    """(HTML of a snak's value, plain value for ``data-value``)."""
    kind = snak.get('snaktype', 'value')
    if kind != 'value':
        text = 'unknown value' if kind == 'somevalue' else 'no value'
        return f'<i>{text}</i>', kind
    value = snak.get('datavalue', {}).get('value')
    if isinstance(value, dict) and 'id' in value:
        eid = str(value['id'])
        label = _label(_entity(wiki, eid), eid)
        href = '/wiki/' + urllib.parse.quote(eid if eid[0] == 'Q' else 'Property:' + eid)
        return (f'<a href="{html.escape(href)}" class="wbmi-entity-link">{html.escape(label)}</a> '
                f'<span class="wbmi-entity-id">({html.escape(eid)})</span>'), eid
    if isinstance(value, dict):
        text = str(value.get('text') or value.get('time') or value.get('amount')
                   or (f"{value.get('latitude')}, {value.get('longitude')}"
                       if 'latitude' in value else json.dumps(value, ensure_ascii=False)))
    else:
        text = str(value)
    return html.escape(text), text


def structured_data_html(wiki: TestWiki, data: dict[str, Any] | None) -> str:
    """The "Structured data" section of a file page: captions, then statements by property."""
    if not data:
        return ('<section id="structured-data" class="wbmi-structured-data"><h2>Structured data</h2>'
                '<p class="wbmi-empty">This file has no structured data yet.</p></section>')
    parts = ['<section id="structured-data" class="wbmi-structured-data">',
             f'<h2>Structured data <small>({html.escape(str(data.get("id", "")))})</small></h2>']
    captions = data.get('labels') or {}
    if captions:
        parts.append('<h3>Captions</h3><dl class="wbmi-captions">')
        for lang, caption in sorted(captions.items()):
            parts.append(f'<dt>{html.escape(lang)}</dt><dd lang="{html.escape(lang)}">'
                         f'{html.escape(str(caption.get("value", "")))}</dd>')
        parts.append('</dl>')
    for prop, statements in (data.get('statements') or {}).items():
        name = _label(_entity(wiki, prop), prop)
        parts.append(f'<div class="wbmi-statements" data-property="{html.escape(prop)}">'
                     f'<h3>{html.escape(name)} <small>({html.escape(prop)})</small></h3><ul>')
        for statement in statements:
            shown, plain = _value_html(wiki, statement.get('mainsnak', {}))
            rank = str(statement.get('rank', 'normal'))
            note = {'preferred': ' <small>(prominent)</small>',
                    'deprecated': ' <small>(deprecated)</small>'}.get(rank, '')
            parts.append(f'<li class="wbmi-statement" data-value="{html.escape(plain)}" '
                         f'data-rank="{html.escape(rank)}">{shown}{note}</li>')
        parts.append('</ul></div>')
    parts.append('</section>')
    return ''.join(parts)


def view(wiki: TestWiki, page: Page, lang: str = 'en') -> Reply:
    """A page view: the title, the wikitext (escaped) and, for a file, its structured data;
    with the reviewer's user scripts when the test set some (:mod:`.userscripts`)."""
    title = html.escape(page.title)
    body = [f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title} - '
            f'Wikivel Test Commons</title>{userscripts.head_html(wiki, page, lang)}</head>'
            f'<body><h1 id="firstHeading">{title}</h1>',
            f'<pre id="wikitext">{html.escape(page.text)}</pre>']
    if page.ns == 6:
        body.append(structured_data_html(wiki, wiki.store.entity_data(page)))
    body.append('</body></html>')
    return 200, {'Content-Type': _HTML}, ''.join(body).encode('utf-8')
