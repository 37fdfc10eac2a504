"""Wikitext write modules: ``action=edit`` and ``action=purge``.

The bot edits wikitext only for chores (a stop page, a null edit to refresh
maintenance categories); the same checks as Wikibase writes apply: POST,
CSRF token, protection, tags, ``baserevid`` conflicts.
"""
from __future__ import annotations

from typing import Any

from .api_write import _check_protection, _check_tags, _preamble
from .apibase import ApiError, Ctx
from .model import split_title
from .recording import RecordedEdit


def edit(ctx: Ctx) -> dict[str, Any]:
    """``action=edit`` of wikitext pages (stop pages, null edits …)."""
    _preamble(ctx, 'edit')
    store = ctx.wiki.store
    if ctx.get('pageid'):
        page = store.page_by_id(ctx.integer('pageid', 0))
        title = page.title if page else None
        if page is None:
            raise ApiError('nosuchpageid', f'There is no page with ID '
                           f'{ctx.get("pageid")}.')
    else:
        ctx.require('title')
        title = split_title(ctx.get('title') or '')[1]
        page = store.page(title)
    if page is None and ctx.flag('nocreate'):
        raise ApiError('missingtitle', "The page you specified doesn't exist.")
    if page is not None and ctx.flag('createonly'):
        raise ApiError('articleexists', 'The article you tried to create has '
                       'been created already.')
    if page is not None:
        _check_protection(ctx, page)
        if ctx.get('baserevid') and ctx.integer('baserevid', 0) != page.latest.revid:
            raise ApiError('editconflict', 'Edit conflict detected.')
    old_text = page.text if page else ''
    text = ctx.get('text')
    if text is None:
        text = (ctx.get('prependtext') or '') + old_text + (ctx.get('appendtext') or '')
    assert ctx.user is not None and title is not None
    tags = _check_tags(ctx)
    if page is not None and text == old_text:
        return {'edit': {'result': 'Success', 'pageid': page.pageid,
                         'title': page.title, 'contentmodel': 'wikitext',
                         'nochange': True, 'watched': False}}
    if page is None:
        page = store.create_page(title, text, user=ctx.user.name,
                                 comment=ctx.get('summary') or '')
        rev, old = page.latest, 0
    else:
        old = page.latest.revid
        rev = store.add_revision(page, {'main': ('wikitext', text)},
                                 user=ctx.user.name, minor=ctx.flag('minor'),
                                 comment=ctx.get('summary') or '', tags=tags)
    ctx.wiki.recorder.add_edit(RecordedEdit(
        entity=page.title, action='edit', claim=None,
        summary=ctx.get('summary') or '', tags=tags, bot=ctx.flag('bot'),
        baserevid=ctx.integer('baserevid', 0) if ctx.get('baserevid') else None,
        new_revid=rev.revid, old_revid=old, user=ctx.user.name, title=page.title))
    out: dict[str, Any] = {'result': 'Success', 'pageid': page.pageid,
                           'title': page.title, 'contentmodel': 'wikitext',
                           'oldrevid': old, 'newrevid': rev.revid,
                           'newtimestamp': rev.timestamp, 'watched': False}
    if old == 0:
        out['new'] = True
    return {'edit': out}


def purge(ctx: Ctx) -> dict[str, Any]:
    """``action=purge``: nothing is cached here, just answer like MediaWiki."""
    if ctx.method != 'POST':
        raise ApiError('mustbeposted', 'The "purge" module requires a POST '
                       'request.')
    rows = []
    for raw in ctx.multi('titles'):
        ns, title = split_title(raw)
        row: dict[str, Any] = {'ns': ns, 'title': title}
        row['purged' if ctx.wiki.store.page(title) else 'missing'] = True
        rows.append(row)
    return {'batchcomplete': True, 'purge': rows}
