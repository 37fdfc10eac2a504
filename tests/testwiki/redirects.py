"""Item redirects: items that moved (merged into another item), as Wikibase keeps and
answers them.

Read in mediawiki-extensions-Wikibase at 3ffc6928d0f455472225716263081965bc1061ac:

* storage — a merged item's page keeps a redirect as its content,
  ``{"entity": "Q1", "redirect": "Q2"}`` (``lib/includes/Store/EntityContentDataCodec.php``,
  ``encodeRedirect``), and the page is a MediaWiki redirect to the target's page;
  ``wbmergeitems`` moves the source's sitelinks (and terms, statements) onto the target
  first (``repo/includes/ChangeOp/ChangeOpsMerge.php``). Here :func:`merge_item` moves the
  sitelinks, so a look-up by sitelink finds the target, and leaves the target's statements
  and terms as they are.
* ``wbgetentities`` — ``repo/includes/Api/GetEntities.php``: with ``redirects=yes`` (the
  default) ``getEntityRevision`` follows the redirect (``RevisionedUnresolvedRedirectException``
  → the target's revision), and ``ResultBuilder::addEntityRevision`` files the target's
  record **under the id that was asked** with ``"redirects": {"from": asked, "to": target}``
  between the page info and the entity (whose ``id`` is the target's); with
  ``redirects=no`` the redirect is answered like a missing entity, ``{"id": asked,
  "missing": ""}`` (``handleEntity`` → ``addMissingEntity``).
* writing a statement whose value is a redirected item is **accepted** and stored with the
  id as sent: the value validator's ``EntityExistsValidator`` asks ``hasEntity`` of the
  repository's ``EntityLookup``, which is a ``RedirectResolvingEntityLookup``
  (``repo/includes/Store/Sql/SqlStore.php``, ``getEntityLookup``). Nothing on the wiki's side
  stops a bot from writing the old id of a merged item; the bot has to look.
"""
from __future__ import annotations

import json
from typing import Any

from .model import Page
from .store import WikiStore


def redirect_target(data: dict[str, Any] | None) -> str:
    """The target id when *data* (an entity page's stored content) is a redirect, else ""."""
    if isinstance(data, dict) and 'redirect' in data and 'entity' in data and 'id' not in data:
        return str(data['redirect'])
    return ''


def resolve(store: WikiStore, eid: str) -> tuple[str, Page | None, dict[str, Any] | None]:
    """(the id the content is under, its page, its entity data) for *eid*, one redirect
    followed (Wikibase follows one: a redirect to a redirect is not resolved further)."""
    page = store.entity_page(eid)
    data = store.entity_data(page) if page is not None else None
    target = redirect_target(data)
    if not target:
        return eid, page, data
    page = store.entity_page(target)
    data = store.entity_data(page) if page is not None else None
    if redirect_target(data):
        return target, None, None
    return target, page, data


def merge_item(store: WikiStore, source: str, target: str, *, user: str = 'Merge Helper',
               comment: str = '') -> Page:
    """Merge item *source* into *target*: the target gets the source's sitelinks (one
    revision), the source becomes a redirect to it (one revision); the source's page.

    :raises ValueError: either is not an item here, either is a redirect already, they
        are the same item, or both have a page on one wiki (conflicting sitelinks).
    """
    with store.lock:
        src_page, dst_page = store.entity_page(source), store.entity_page(target)
        if source == target or src_page is None or dst_page is None:
            raise ValueError(f'cannot merge {source} into {target}: both must be items here')
        src, dst = store.entity_data(src_page), store.entity_data(dst_page)
        if redirect_target(src) or redirect_target(dst) or (src or {}).get('type') != 'item':
            raise ValueError(f'cannot merge {source} into {target}: a redirect or not an item')
        assert src is not None and dst is not None
        links = dict(src.get('sitelinks') or {})
        clash = sorted(set(links) & set(dst.get('sitelinks') or {}))
        if clash:  # ChangeOpsMerge refuses to merge two pages of one wiki
            raise ValueError(f'cannot merge {source} into {target}: conflicting sitelinks '
                             f'on {", ".join(clash)}')
        if links:
            merged = {**(dst.get('sitelinks') or {}), **links}
            store.set_entity(dst_page, {**dst, 'sitelinks': merged}, user=user,
                             comment=comment or f'/* wbmergeitems-from:0||{source} */')
        text = json.dumps({'entity': source, 'redirect': target})
        store.add_revision(src_page, {'main': (src_page.latest.slots['main'][0], text)}, user=user,
                           comment=comment or f'/* wbcreateredirect:0||{source}|{target} */')
        src_page.redirect_to = target
        return src_page
