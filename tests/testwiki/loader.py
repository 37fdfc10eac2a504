"""Load a fixture directory into a :class:`~.store.WikiStore`.

Layout (see README.md)::

    site.json                 users, bot passwords, change tags, hidden
                              categories, extra wiki pages
    items.jsonl               one Wikibase entity (item/property) per line
    files/NAME                file bytes (NAME uses underscores)
    files/NAME.wiki           description page wikitext
    files/NAME.json           metadata: pageid, logid, timestamp, uploader …
    files/NAME.mediainfo.json MediaInfo entity (optional)
    files/NAME.render.png     rendering for SVG/PDF/video (optional)

All fixture operations (uploads, structured-data edits, overwrites,
deletions) are replayed in timestamp order so revision ids grow with time.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .model import FileInfo, User, split_title
from .store import WikiStore

DEFAULT_FIXTURES = Path(__file__).resolve().parent / 'fixtures'
_SIDE_SUFFIXES = ('.wiki', '.json', '.mediainfo.json', '.render.png')


def _mediatype(mime: str) -> str:
    if mime == 'image/svg+xml':
        return 'DRAWING'
    if mime == 'application/pdf':
        return 'OFFICE'
    if mime.startswith('video/'):
        return 'VIDEO'
    if mime.startswith('audio/'):
        return 'AUDIO'
    return 'BITMAP'


def _file_events(store: WikiStore, path: Path) -> list[tuple[str, int, Callable[[], None]]]:
    """Timestamped operations that recreate one fixture file's history."""
    meta: dict[str, Any] = json.loads(path.with_name(path.name + '.json').read_text())
    wikitext = path.with_name(path.name + '.wiki').read_text(encoding='utf-8')
    mi_path = path.with_name(path.name + '.mediainfo.json')
    render_path = path.with_name(path.name + '.render.png')
    name = path.name.replace('_', ' ')
    mime = meta['mime']
    user = meta['uploader']
    account = store.user(user)
    info = FileInfo(
        name=name, data=path.read_bytes(), mime=mime, width=meta['width'],
        height=meta['height'], timestamp=meta['timestamp'], user=user,
        userid=account.userid if account else 0,
        comment=meta.get('comment', ''),
        render=render_path.read_bytes() if render_path.exists() else None,
        mediatype=meta.get('mediatype', _mediatype(mime)),
        duration=meta.get('duration'), pagecount=meta.get('pagecount'))
    hidden = list(meta.get('hidden_categories', []))
    store.hidden_categories.update(hidden)
    events: list[tuple[str, int, Callable[[], None]]] = []

    def do_upload() -> None:
        page, _ = store.upload(name, info, wikitext=wikitext, logid=meta['logid'],
                               pageid=meta['pageid'], template_categories=hidden,
                               tags=meta.get('tags', []))
        page.protection = [dict(p) for p in meta.get('protection', [])]

    events.append((meta['timestamp'], 0, do_upload))
    if mi_path.exists():
        sdc = meta.get('sdc', {})

        def do_sdc() -> None:
            page = store.page('File:' + name)
            assert page is not None
            store.set_mediainfo(
                page, json.loads(mi_path.read_text(encoding='utf-8')),
                user=sdc.get('user', user),
                comment=sdc.get('comment', '/* wbeditentity-update:0| */ '
                                'Structured data added'),
                timestamp=sdc.get('timestamp', meta['timestamp']))

        events.append((sdc.get('timestamp', meta['timestamp']), 1, do_sdc))
    for over in meta.get('overwrites', []):
        def do_overwrite(over: dict[str, Any] = over) -> None:
            page = store.page('File:' + name)
            assert page is not None and page.file is not None
            page.file.timestamp = over['timestamp']
            page.file.user = over['user']
            page.file.comment = over.get('comment', '')
            store.add_revision(page, {}, user=over['user'],
                               comment=over.get('comment', ''),
                               timestamp=over['timestamp'])
            store.record_upload(page, action='overwrite', logid=over['logid'],
                                timestamp=over['timestamp'], user=over['user'],
                                comment=over.get('comment', ''))

        events.append((over['timestamp'], 2, do_overwrite))
    deleted = meta.get('deleted')
    if deleted:
        def do_delete() -> None:
            store.delete_page('File:' + name, user=deleted.get('user', 'Admin'),
                              reason=deleted.get('reason', 'Copyright violation'),
                              timestamp=deleted['timestamp'],
                              logid=deleted.get('logid'))

        events.append((deleted['timestamp'], 3, do_delete))
    return events


def load_fixtures(store: WikiStore, root: Path) -> str:
    """Fill *store* from *root*; return the bot's bot-password."""
    site = json.loads((root / 'site.json').read_text(encoding='utf-8'))
    store.bump_counters(revid=site.get('first_revid', 1) - 1)
    bot_password = ''
    for raw in site['users']:
        user = User(name=raw['name'], userid=raw['userid'],
                    groups=list(raw.get('groups', [])),
                    registration=raw.get('registration', '2020-01-01T00:00:00Z'),
                    botpasswords=dict(raw.get('botpasswords', {})),
                    blocked=bool(raw.get('blocked', False)))
        store.add_user(user)
        if raw['name'] == 'WikivelBot':
            bot_password = user.botpasswords.get('test', '')
    store.change_tags.update(site.get('change_tags', []))
    store.hidden_categories.update(site.get('hidden_categories', []))
    base_ts = site.get('base_timestamp', '2024-01-01T00:00:00Z')
    for raw in site.get('pages', []):
        store.create_page(raw['title'], raw['text'], user=raw.get('user', 'Admin'),
                          timestamp=raw.get('timestamp', base_ts),
                          pageid=raw.get('pageid'))
    items = root / 'items.jsonl'
    if items.exists():
        for line in items.read_text(encoding='utf-8').splitlines():
            if line.strip():
                store.add_entity(json.loads(line), timestamp=base_ts)
    events: list[tuple[str, int, Callable[[], None]]] = []
    files = root / 'files'
    if files.is_dir():
        for path in sorted(files.iterdir()):
            if path.name.endswith(_SIDE_SUFFIXES) or path.name.startswith('.'):
                continue
            events += _file_events(store, path)
    for _, _, apply in sorted(events, key=lambda e: (e[0], e[1])):
        apply()
    create_category_pages(store, base_ts)
    return bot_password


def create_category_pages(store: WikiStore, timestamp: str) -> None:
    """Give every used category a page, and every category an item links to with a
    ``commonswiki`` sitelink (on Commons such a page exists and its ``pageprops`` name
    the item); hidden ones carry __HIDDENCAT__."""
    used: set[str] = set()
    for page in list(store.iter_pages()):
        used.update(title for title, _ in store.categories_of(page))
    for eid in list(store.entity_pages):
        page = store.entity_page(eid)
        link = ((store.entity_data(page) if page else None) or {}).get(
            'sitelinks', {}).get('commonswiki')
        if link and split_title(link['title'])[0] == 14:
            used.add(split_title(link['title'])[1])
    for title in sorted(used):
        if store.page(title) is not None:
            continue
        name = split_title(title)[1].split(':', 1)[1]
        text = ('{{Hiddencat}}\n__HIDDENCAT__\n[[Category:Hidden categories]]'
                if name in store.hidden_categories else
                f'{{{{Catseealso|{name}}}}}\n[[Category:Topics]]')
        store.create_page(title, text, user='Admin', timestamp=timestamp)
