"""``prop=`` modules: info, revisions, categories, categoryinfo, templates,
pageprops (imageinfo lives in :mod:`imageinfo`).

Each takes the context and one existing page and returns the keys to merge
into that page's entry.  ``categories`` can continue across pages
(``clcontinue`` = "pageid|Category_name"), like MediaWiki.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

from .apibase import ApiError, Ctx
from .model import Page, Revision, parse_iso, split_title

_FORMATS = {'wikitext': 'text/x-wiki', 'wikibase-item': 'application/json',
            'wikibase-property': 'application/json',
            'wikibase-mediainfo': 'application/json'}
_TEMPLATE_RE = re.compile(r'\{\{\s*([^{}|#<>\[\]\n]+?)\s*(?:\||\}\})')


def info(ctx: Ctx, page: Page) -> dict[str, Any]:
    """``prop=info`` for an existing page."""
    props = set(ctx.multi('inprop'))
    out: dict[str, Any] = {
        'contentmodel': page.latest.slots['main'][0],
        'pagelanguage': 'en', 'pagelanguagehtmlcode': 'en',
        'pagelanguagedir': 'ltr', 'touched': page.touched,
        'lastrevid': page.latest.revid, 'length': len(page.text.encode()),
    }
    if page.redirect_to:
        out['redirect'] = True
    if len(page.revisions) == 1:
        out['new'] = True
    if 'protection' in props:
        out['protection'] = [dict(p) for p in page.protection]
        out['restrictiontypes'] = ['edit', 'move', 'upload'] if page.ns == 6 \
            else ['edit', 'move']
    if 'url' in props:
        url = f'{ctx.wiki.base_url}/wiki/{page.title.replace(" ", "_")}'
        out.update(fullurl=url, editurl=f'{ctx.wiki.base_url}/w/index.php?'
                   f'title={page.title.replace(" ", "_")}&action=edit',
                   canonicalurl=url)
    if 'displaytitle' in props:
        out['displaytitle'] = page.title
    if 'talkid' in props:
        pass  # no talk pages exist here
    return out


def missing_info(ctx: Ctx, ns: int) -> dict[str, Any]:
    """``prop=info`` extras for a missing page."""
    out: dict[str, Any] = {'contentmodel': 'wikitext', 'pagelanguage': 'en',
                           'pagelanguagehtmlcode': 'en', 'pagelanguagedir': 'ltr'}
    if 'protection' in set(ctx.multi('inprop')):
        out['protection'] = []
        out['restrictiontypes'] = ['create']
    return out


def _slot(ctx: Ctx, role: str, model: str, text: str,
          props: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if 'slotsize' in props:
        out['size'] = len(text.encode())
    if 'slotsha1' in props:
        out['sha1'] = hashlib.sha1(text.encode()).hexdigest()
    if 'contentmodel' in props or 'content' in props:
        out['contentmodel'] = model
    if 'content' in props:
        out['contentformat'] = _FORMATS.get(model, 'text/x-wiki')
        out['content' if ctx.fv == 2 else '*'] = text
    return out


def revision_entry(ctx: Ctx, rev: Revision, props: set[str],
                   slots: list[str] | None) -> dict[str, Any]:
    """One revision in the shape ``rvprop``/``rvslots`` ask for."""
    out: dict[str, Any] = {}
    if 'ids' in props:
        out.update(revid=rev.revid, parentid=rev.parentid)
    if 'flags' in props:
        out['minor'] = rev.minor
    if 'user' in props:
        out['user'] = rev.user
    if 'userid' in props:
        out['userid'] = rev.userid
    if 'timestamp' in props:
        out['timestamp'] = rev.timestamp
    if 'size' in props:
        out['size'] = rev.size()
    if 'sha1' in props:
        out['sha1'] = rev.sha1()
    if 'roles' in props:
        out['roles'] = list(rev.slots)
    if slots is None:
        # Legacy output (no rvslots): main slot content at revision level.
        model, text = rev.slots['main']
        out.update(_slot(ctx, 'main', model, text, props))
    else:
        wanted = list(rev.slots) if '*' in slots else \
            [s for s in slots if s in rev.slots]
        slot_props = props & {'content', 'contentmodel', 'slotsize', 'slotsha1'}
        if slot_props:
            out['slots'] = {role: _slot(ctx, role, *rev.slots[role], props)
                            for role in wanted}
    if 'comment' in props:
        out['comment'] = rev.comment
    if 'parsedcomment' in props:
        out['parsedcomment'] = rev.comment
    if 'tags' in props:
        out['tags'] = list(rev.tags)
    return out


def revisions(ctx: Ctx, page: Page, single: bool) -> dict[str, Any]:
    """``prop=revisions``: latest revision, or a range in single-page mode."""
    props = set(ctx.multi('rvprop') or ['ids', 'timestamp', 'flags',
                                        'comment', 'user'])
    slots = ctx.multi('rvslots') or None
    if slots is None and 'content' in props and 'rvslots' not in ctx.params:
        ctx.warn('main', 'Because "rvslots" was not specified, a legacy format'
                 ' has been used for the output. This format is deprecated, '
                 'and in the future the new format will always be used.')
    for role in slots or []:
        if role not in ('*', 'main', 'mediainfo'):
            raise ApiError('badvalue', 'Unrecognized value for parameter '
                           f'"rvslots": {role}.')
    ranged = any(k in ctx.params for k in ('rvlimit', 'rvstartid', 'rvendid',
                                           'rvstart', 'rvend', 'rvdir', 'rvuser'))
    if not ranged and 'revids' in ctx.params:
        # The page set came from revids: MediaWiki answers those revisions, not the latest.
        wanted = {int(r) for r in ctx.multi('revids') if r.isdigit()}
        revs = [r for r in page.revisions if r.revid in wanted]
    elif not ranged:
        revs = [page.latest]
    else:
        if not single:
            raise ApiError('multpages', 'The "rvlimit" parameter may not be '
                           'used with multiple pages.')
        revs = list(page.revisions)
        newer = ctx.get('rvdir') == 'newer'
        if not newer:
            revs.reverse()

        def after(rev: Revision, revid: int) -> bool:
            """Whether *rev* is at or beyond *revid* in walking order."""
            return rev.revid >= revid if newer else rev.revid <= revid

        if ctx.get('rvstartid'):
            sid = ctx.integer('rvstartid', 0)
            revs = [r for r in revs if after(r, sid)]
        if ctx.get('rvendid'):
            eid = ctx.integer('rvendid', 0)
            revs = [r for r in revs if not after(r, eid) or r.revid == eid]
        if ctx.get('rvstart'):
            ts = parse_iso(ctx.text('rvstart'))
            revs = [r for r in revs if (parse_iso(r.timestamp) >= ts) == newer
                    or parse_iso(r.timestamp) == ts]
        if ctx.get('rvuser'):
            revs = [r for r in revs if r.user == ctx.get('rvuser')]
        cont = ctx.get('rvcontinue')
        if cont:
            try:
                rid = int(cont.rsplit('|', 1)[-1])
            except ValueError:
                raise ApiError('badcontinue', 'Invalid continue param. You '
                               'should pass the original value returned by '
                               'the previous query.') from None
            revs = [r for r in revs if after(r, rid)]
        limit = ctx.limit('rvlimit', 1, 50 if 'content' in props else 500,
                          500 if 'content' in props else 5000)
        if len(revs) > limit:
            nxt = revs[limit]
            ctx.pending_continue['rvcontinue'] = \
                f'{parse_iso(nxt.timestamp).strftime("%Y%m%d%H%M%S")}|{nxt.revid}'
            revs = revs[:limit]
    return {'revisions': [revision_entry(ctx, r, props, slots) for r in revs]}


def categories(ctx: Ctx, page: Page) -> list[dict[str, Any]]:
    """All category rows of *page* (filtering and paging done by caller)."""
    props = set(ctx.multi('clprop'))
    show = set(ctx.multi('clshow'))
    if {'hidden', '!hidden'} <= show:
        raise ApiError('show', 'Incorrect parameter - mutually exclusive '
                       'values may not be supplied.')
    only = {split_title('Category:' + c)[1] for c in ctx.multi('clcategories')}
    rows = []
    for title, hidden in ctx.wiki.store.categories_of(page):
        if ('hidden' in show and not hidden) or ('!hidden' in show and hidden):
            continue
        if only and title not in only:
            continue
        row: dict[str, Any] = {'ns': 14, 'title': title}
        if 'sortkey' in props:
            row['sortkey'] = page.title.split(':', 1)[-1].upper().encode().hex()
            row['sortkeyprefix'] = ''
        if 'timestamp' in props:
            row['timestamp'] = page.latest.timestamp
        if 'hidden' in props:
            row['hidden'] = hidden
        rows.append(row)
    if ctx.get('cldir') == 'descending':
        rows.reverse()
    return rows


def categoryinfo(ctx: Ctx, page: Page) -> dict[str, Any] | None:
    """``prop=categoryinfo`` counts for a category page (None otherwise)."""
    if page.ns != 14:
        return None
    members = ctx.wiki.store.category_members(page.title)
    files = sum(1 for m in members if m.ns == 6)
    subcats = sum(1 for m in members if m.ns == 14)
    return {'size': len(members), 'pages': len(members) - files - subcats,
            'files': files, 'subcats': subcats,
            'hidden': page.title.split(':', 1)[1] in ctx.wiki.store.hidden_categories}


def templates(ctx: Ctx, page: Page) -> list[dict[str, Any]]:
    """``prop=templates`` from a plain scan of the wikitext."""
    if page.latest.slots['main'][0] != 'wikitext':
        return []
    names = set()
    for match in _TEMPLATE_RE.finditer(page.text):
        name = match.group(1).strip()
        if not name or name.startswith(('#', 'subst:', 'safesubst:')) or \
                name.upper() in ('PAGENAME', 'DEFAULTSORT'):
            continue
        try:
            names.add(split_title(name if ':' in name else 'Template:' + name))
        except ValueError:
            continue
    return [{'ns': ns, 'title': title} for ns, title in sorted(names)]


def pageprops(ctx: Ctx, page: Page) -> dict[str, Any] | None:
    """``prop=pageprops``: ``wikibase_item`` of a page an item links to (a category
    whose item carries a ``commonswiki`` sitelink to it, as on Commons), ``hiddencat``
    of hidden categories; ``ppprop`` picks names.  None when the page has none."""
    from .api_wikibase import sitelink_index
    from .siteinfo import WIKIID

    props: dict[str, Any] = {}
    eid = sitelink_index(ctx.wiki.store).get((WIKIID, page.title))
    if eid:
        props['wikibase_item'] = eid
    if page.ns == 14 and '__HIDDENCAT__' in page.text:
        props['hiddencat'] = ''
    wanted = set(ctx.multi('ppprop'))
    if wanted:
        props = {k: v for k, v in props.items() if k in wanted}
    return props or None
