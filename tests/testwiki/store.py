"""In-memory wiki state: pages, revisions, files, log, users, entities.

Every public method takes the store lock, so the threaded HTTP server and a
test thread calling the Python API (``wiki.add_upload`` …) never see a
half-applied change.  Wikibase entities live in page slots exactly like in
MediaWiki: items/properties in the main slot of their own page, MediaInfo in
the ``mediainfo`` slot of the file page.
"""
from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

from .edit_comments import stored as stored_comment
from .model import FileInfo, LogEvent, Page, Revision, User, first_upper, now_iso, split_title

_CAT_RE = re.compile(r'\[\[\s*category\s*:\s*([^\]|\n]+?)\s*(?:\|[^\]]*)?\]\]',
                     re.IGNORECASE)
_COMMENT_RE = re.compile(r'<!--.*?-->', re.DOTALL)
ENTITY_MODELS = {'item': 'wikibase-item', 'property': 'wikibase-property'}


class WikiStore:
    """All mutable wiki state plus id counters."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.pages: dict[int, Page] = {}
        self.by_title: dict[str, int] = {}
        self.deleted: dict[str, Page] = {}
        self.log: list[LogEvent] = []
        self.users: dict[str, User] = {}
        self.entity_pages: dict[str, int] = {}    # Q1/P31 → page id
        self.hidden_categories: set[str] = set()
        self.change_tags: set[str] = set()
        self._next_revid = 1
        self._next_pageid = 1
        self._next_logid = 1

    # -- ids -----------------------------------------------------------
    def alloc_revid(self) -> int:
        """Return a fresh revision id."""
        with self.lock:
            self._next_revid += 1
            return self._next_revid - 1

    def alloc_pageid(self) -> int:
        """Return a fresh page id."""
        with self.lock:
            self._next_pageid += 1
            return self._next_pageid - 1

    def alloc_logid(self) -> int:
        """Return a fresh log id (higher than every fixture log id)."""
        with self.lock:
            self._next_logid += 1
            return self._next_logid - 1

    def bump_counters(self, *, revid: int = 0, pageid: int = 0,
                      logid: int = 0) -> None:
        """Make sure future ids are above ids taken from fixtures."""
        with self.lock:
            self._next_revid = max(self._next_revid, revid + 1)
            self._next_pageid = max(self._next_pageid, pageid + 1)
            self._next_logid = max(self._next_logid, logid + 1)

    # -- users ---------------------------------------------------------
    def add_user(self, user: User) -> None:
        """Register an account."""
        with self.lock:
            self.users[user.name] = user

    def user(self, name: str) -> User | None:
        """Look up an account by name (first letter case-insensitive)."""
        with self.lock:
            if not name:
                return None
            return self.users.get(first_upper(name))

    # -- pages ---------------------------------------------------------
    def page(self, title: str) -> Page | None:
        """Return the existing page for *title* (any spelling) or None."""
        try:
            _, full = split_title(title)
        except ValueError:
            return None
        with self.lock:
            pid = self.by_title.get(full)
            return self.pages.get(pid) if pid is not None else None

    def page_by_id(self, pageid: int) -> Page | None:
        """Return the existing page with *pageid* or None."""
        with self.lock:
            return self.pages.get(pageid)

    def iter_pages(self, ns: int | None = None) -> Iterator[Page]:
        """Iterate over existing pages sorted by title."""
        with self.lock:
            pages = [p for p in self.pages.values() if ns is None or p.ns == ns]
        return iter(sorted(pages, key=lambda p: (p.ns, p.title)))

    def create_page(self, title: str, text: str, *, user: str = 'Maintenance script',
                    timestamp: str | None = None, comment: str = '',
                    pageid: int | None = None, model: str = 'wikitext',
                    extra_slots: dict[str, tuple[str, str]] | None = None
                    ) -> Page:
        """Create a page with one revision and index it."""
        ns, full = split_title(title)
        with self.lock:
            if full in self.by_title:
                raise ValueError(f'page exists: {full}')
            pid = pageid if pageid is not None else self.alloc_pageid()
            self.bump_counters(pageid=pid)
            page = Page(pageid=pid, ns=ns, title=full)
            slots = {'main': (model, text), **(extra_slots or {})}
            self.add_revision(page, slots, user=user, comment=comment,
                              timestamp=timestamp)
            self.pages[pid] = page
            self.by_title[full] = pid
            redirect = re.match(r'\s*#redirect\s*\[\[([^\]|]+)', text, re.IGNORECASE)
            if redirect and model == 'wikitext':
                page.redirect_to = split_title(redirect.group(1))[1]
            return page

    def add_revision(self, page: Page, slots: dict[str, tuple[str, str]], *,
                     user: str, comment: str, timestamp: str | None = None,
                     tags: list[str] | None = None, minor: bool = False
                     ) -> Revision:
        """Append a revision carrying *slots* (other slots are inherited)."""
        with self.lock:
            merged = dict(page.revisions[-1].slots) if page.revisions else {}
            merged.update(slots)
            account = self.user(user)
            rev = Revision(revid=self.alloc_revid(),
                           parentid=page.revisions[-1].revid if page.revisions else 0,
                           timestamp=timestamp or now_iso(), user=user,
                           userid=account.userid if account else 0,
                           # MediaWiki's CommentStore keeps 500 characters of any comment.
                           comment=stored_comment(comment), slots=merged, minor=minor,
                           tags=list(tags or []))
            page.revisions.append(rev)
            page.touched = rev.timestamp
            if account:
                account.editcount += 1
            return rev

    def delete_page(self, title: str, *, user: str = 'Admin',
                    reason: str = 'Copyright violation',
                    timestamp: str | None = None,
                    logid: int | None = None) -> Page:
        """Delete a page (and its file); the upload log entries stay."""
        with self.lock:
            page = self.page(title)
            if page is None:
                raise KeyError(title)
            del self.pages[page.pageid]
            del self.by_title[page.title]
            self.deleted[page.title] = page
            account = self.user(user)
            lid = logid if logid is not None else self.alloc_logid()
            self.bump_counters(logid=lid)
            self.log.append(LogEvent(
                logid=lid, type='delete', action='delete',
                title=page.title, ns=page.ns, logpage=page.pageid, user=user,
                userid=account.userid if account else 0,
                timestamp=timestamp or now_iso(), comment=reason))
            return page

    # -- categories ----------------------------------------------------
    def categories_of(self, page: Page) -> list[tuple[str, bool]]:
        """(Category title, hidden) pairs of a page, sorted like ``cl_to``."""
        text = _COMMENT_RE.sub('', page.text) if page.latest.slots['main'][0] \
            == 'wikitext' else ''
        names = {split_title('Category:' + m.group(1))[1]
                 for m in _CAT_RE.finditer(text)}
        names |= {split_title('Category:' + c)[1] for c in page.template_categories}
        with self.lock:
            return sorted((n, n.split(':', 1)[1] in self.hidden_categories)
                          for n in names)

    def category_members(self, category: str) -> list[Page]:
        """Existing pages in *category* (full title), sorted by title."""
        with self.lock:
            return [p for p in self.iter_pages()
                    if any(c == category for c, _ in self.categories_of(p))]

    # -- files and the upload log --------------------------------------
    def files(self) -> list[Page]:
        """Existing file pages."""
        with self.lock:
            return [p for p in self.pages.values() if p.file is not None]

    def record_upload(self, page: Page, *, action: str, logid: int | None = None,
                      timestamp: str, user: str, comment: str,
                      tags: list[str] | None = None) -> LogEvent:
        """Append an ``upload/upload`` or ``upload/overwrite`` log entry."""
        assert page.file is not None
        with self.lock:
            lid = logid if logid is not None else self.alloc_logid()
            self.bump_counters(logid=lid)
            account = self.user(user)
            event = LogEvent(
                logid=lid, type='upload', action=action, title=page.title,
                ns=page.ns, logpage=page.pageid, user=user,
                userid=account.userid if account else 0, timestamp=timestamp,
                comment=comment, tags=list(tags or []),
                params={'img_sha1': _base36_sha1(page.file.data),
                        'img_timestamp': timestamp})
            self.log.append(event)
            return event

    def upload(self, name: str, info: FileInfo, *, wikitext: str,
               mediainfo: dict[str, Any] | None = None,
               logid: int | None = None, pageid: int | None = None,
               template_categories: list[str] | None = None,
               tags: list[str] | None = None) -> tuple[Page, LogEvent]:
        """Upload a new file or overwrite an existing one."""
        with self.lock:
            existing = self.page('File:' + name)
            if existing is not None:
                existing.file = info
                rev = self.add_revision(existing, {}, user=info.user,
                                        comment=info.comment,
                                        timestamp=info.timestamp, tags=tags)
                del rev  # the overwrite makes a null revision, as in MW
                event = self.record_upload(
                    existing, action='overwrite', logid=logid,
                    timestamp=info.timestamp, user=info.user,
                    comment=info.comment, tags=tags)
                return existing, event
            page = self.create_page('File:' + name, wikitext, user=info.user,
                                    timestamp=info.timestamp, pageid=pageid,
                                    comment=info.comment)
            page.file = info
            page.template_categories = list(template_categories or [])
            if mediainfo is not None:
                self.set_mediainfo(page, mediainfo, user=info.user,
                                   comment='/* wbeditentity-create:0| */',
                                   timestamp=info.timestamp)
            event = self.record_upload(page, action='upload', logid=logid,
                                       timestamp=info.timestamp,
                                       user=info.user, comment=info.comment,
                                       tags=tags)
            return page, event

    def upload_events(self) -> list[LogEvent]:
        """All log events sorted by (timestamp, logid)."""
        with self.lock:
            return sorted(self.log, key=lambda e: (e.timestamp, e.logid))

    # -- entities ------------------------------------------------------
    def add_entity(self, entity: dict[str, Any], *, user: str = 'Maintenance script',
                   timestamp: str | None = None) -> Page:
        """Store an item or property entity on its own page."""
        eid = entity['id']
        etype = entity.get('type', 'item')
        title = eid if etype == 'item' else f'Property:{eid}'
        body = {k: v for k, v in entity.items()
                if k not in ('lastrevid', 'modified', 'pageid', 'ns', 'title')}
        page = self.create_page(title, json.dumps(body, ensure_ascii=False),
                                user=user, timestamp=timestamp,
                                model=ENTITY_MODELS[etype],
                                comment='/* wbeditentity-create:0| */')
        with self.lock:
            self.entity_pages[eid] = page.pageid
        return page

    def entity_page(self, eid: str) -> Page | None:
        """Page holding entity *eid*: items/properties, or a file for M-ids."""
        with self.lock:
            if eid.startswith('M') and eid[1:].isdigit():
                page = self.pages.get(int(eid[1:]))
                return page if page is not None and page.ns == 6 else None
            pid = self.entity_pages.get(eid)
            return self.pages.get(pid) if pid is not None else None

    def entity_data(self, page: Page) -> dict[str, Any] | None:
        """Parsed entity JSON of *page* (None: a file without MediaInfo)."""
        if page.ns == 6:
            slot = page.latest.slots.get('mediainfo')
            return json.loads(slot[1]) if slot else None
        return json.loads(page.text)

    def set_mediainfo(self, page: Page, data: dict[str, Any], *, user: str,
                      comment: str, timestamp: str | None = None,
                      tags: list[str] | None = None) -> Revision:
        """Write a MediaInfo entity into the ``mediainfo`` slot."""
        data = dict(data)
        data.update(type='mediainfo', id=f'M{page.pageid}')
        data.setdefault('labels', {})
        data.setdefault('descriptions', {})
        data.setdefault('statements', {})
        text = json.dumps(data, ensure_ascii=False, separators=(',', ':'))
        return self.add_revision(page, {'mediainfo': ('wikibase-mediainfo', text)},
                                 user=user, comment=comment,
                                 timestamp=timestamp, tags=tags)

    def set_entity(self, page: Page, data: dict[str, Any], *, user: str,
                   comment: str, tags: list[str] | None = None) -> Revision:
        """Save changed entity JSON as a new revision of its page."""
        if page.ns == 6:
            return self.set_mediainfo(page, data, user=user, comment=comment,
                                      tags=tags)
        model = page.latest.slots['main'][0]
        text = json.dumps(data, ensure_ascii=False)
        return self.add_revision(page, {'main': (model, text)}, user=user,
                                 comment=comment, tags=tags)


def _base36_sha1(data: bytes) -> str:
    """SHA-1 in MediaWiki's base-36 storage form (``img_sha1`` log param)."""
    import hashlib
    num = int(hashlib.sha1(data).hexdigest(), 16)
    digits = '0123456789abcdefghijklmnopqrstuvwxyz'
    out = ''
    while num:
        num, rem = divmod(num, 36)
        out = digits[rem] + out
    return out.rjust(31, '0')
