"""``action=query``: meta modules, the page set (titles, pageids, revids,
generators, redirects), prop modules, list modules, and continuation.

Output follows MediaWiki: formatversion=1 keys ``query.pages`` by page id
(negative ids for missing titles) and marks flags with ``""``;
formatversion=2 returns a list and real booleans.
"""
from __future__ import annotations

from typing import Any

from . import api_props, auth, siteinfo
from .api_lists import LISTS
from .apibase import ApiError, Ctx
from .imageinfo import imageinfo
from .model import InvalidTitle, Page, now_iso, split_title

_PROP_MODULES = {'info', 'imageinfo', 'categories', 'revisions',
                 'categoryinfo', 'templates', 'pageprops'}
_PAGE_GENERATORS = {'categories': 'cl', 'templates': 'tl'}
_CONT_MODULE = {'cl': 'categories', 'rv': 'revisions'}


class _Entry:
    """One member of the page set: an existing page or a placeholder."""

    def __init__(self, page: Page | None, ns: int | None = None,
                 title: str | None = None, *, pageid: int | None = None,
                 invalid: str | None = None) -> None:
        self.page = page
        self.ns = page.ns if page else ns
        self.title = page.title if page else title
        self.pageid = page.pageid if page else pageid
        self.invalid = invalid


def _siteinfo(ctx: Ctx) -> dict[str, Any]:
    out: dict[str, Any] = {}
    bad = []
    for prop in ctx.multi('siprop') or ['general']:
        try:
            out[prop] = siteinfo.siteinfo_prop(prop, ctx.wiki.server, now_iso())
        except KeyError:
            bad.append(prop)
    if bad:
        ctx.warn('siteinfo', 'Unrecognized value{} for parameter "siprop": {}.'
                 .format('s' if len(bad) > 1 else '', ', '.join(bad)))
    return out


def _meta(ctx: Ctx, query: dict[str, Any]) -> None:
    for meta in ctx.multi('meta'):
        if meta == 'siteinfo':
            query.update(_siteinfo(ctx))
        elif meta == 'userinfo':
            query['userinfo'] = auth.userinfo(ctx)
        elif meta == 'tokens':
            query['tokens'] = auth.tokens(ctx)
        elif meta == 'wikibase':
            query['wikibase'] = {'repo': {'url': {
                'base': ctx.wiki.server, 'scriptpath': '/w',
                'articlepath': '/wiki/$1'}}, 'siteid': siteinfo.WIKIID}
        elif meta == 'filerepoinfo':
            query['repos'] = [{
                'name': 'local', 'displayname': siteinfo.SITENAME,
                'rootUrl': ctx.wiki.server + '/images',
                'url': ctx.wiki.server + '/images',
                'thumbUrl': ctx.wiki.server + '/thumb',
                'local': True, 'initialCapital': True,
                'scriptDirUrl': ctx.wiki.server + '/w',
                'favicon': '', 'canUpload': True}]
        else:
            ctx.warn('query', f'Unrecognized value for parameter "meta": {meta}.')


def _titles(ctx: Ctx, raw_titles: list[str], query: dict[str, Any]
            ) -> list[_Entry]:
    store = ctx.wiki.store
    entries: list[_Entry] = []
    normalized = []
    for raw in raw_titles:
        try:
            ns, title = split_title(raw)
        except InvalidTitle as exc:
            reason = ('The requested page title is empty or contains only '
                      'the name of a namespace.' if str(exc) == 'empty' else
                      'The requested page title contains invalid characters: '
                      f'"{raw}".')
            entries.append(_Entry(None, title=raw, invalid=reason))
            continue
        if title != raw:
            item: dict[str, Any] = {'from': raw, 'to': title}
            if ctx.fv == 2:
                item['fromencoded'] = False
            normalized.append(item)
        entries.append(_Entry(store.page(title), ns, title))
    if normalized:
        query['normalized'] = normalized
    return entries


def _generator(ctx: Ctx, base: list[_Entry]) -> tuple[list[_Entry], dict[str, str]]:
    """Run ``generator=``; return its page set and its continuation."""
    name = ctx.text('generator')
    store = ctx.wiki.store
    if name in LISTS:
        prefix, func = LISTS[name]
        result = func(ctx, 'g' + prefix)
        return [_Entry(p) for p in result.pages], result.cont or {}
    if name in _PAGE_GENERATORS:
        found: dict[str, _Entry] = {}
        for entry in base:
            if entry.page is None:
                continue
            rows = (api_props.categories(ctx, entry.page) if name == 'categories'
                    else api_props.templates(ctx, entry.page))
            for row in rows:
                page = store.page(row['title'])
                found[row['title']] = _Entry(page, row['ns'], row['title'])
        return list(found.values()), {}
    raise ApiError('badvalue', f'Unrecognized value for parameter "generator": '
                   f'{name}.')


def _pageset(ctx: Ctx, query: dict[str, Any]) -> tuple[list[_Entry], dict[str, str]]:
    store = ctx.wiki.store
    entries: list[_Entry] = []
    given = [k for k in ('titles', 'pageids', 'revids') if k in ctx.params]
    if len(given) > 1:
        raise ApiError('multisource', f'Cannot use "{given[0]}" at the same '
                       f'time as "{given[1]}".')
    if 'titles' in ctx.params:
        entries = _titles(ctx, ctx.multi('titles'), query)
    elif 'pageids' in ctx.params:
        for raw in ctx.multi('pageids'):
            pid = int(raw) if raw.lstrip('-').isdigit() else 0
            page = store.page_by_id(pid)
            entries.append(_Entry(page) if page else _Entry(None, pageid=pid))
    elif 'revids' in ctx.params:
        bad = []
        for raw in ctx.multi('revids'):
            rid = int(raw) if raw.isdigit() else 0
            page = next((p for p in store.iter_pages()
                         if any(r.revid == rid for r in p.revisions)), None)
            if page is None:
                bad.append({'revid': rid})
            elif all(e.page is not page for e in entries):
                entries.append(_Entry(page))
        if bad:
            query['badrevids'] = {str(b['revid']): b for b in bad} \
                if ctx.fv == 1 else bad
    gen_cont: dict[str, str] = {}
    if 'generator' in ctx.params:
        entries, gen_cont = _generator(ctx, entries)
    if ctx.flag('redirects'):
        redirects = []
        for i, entry in enumerate(entries):
            if entry.page is not None and entry.page.redirect_to:
                target = entry.page.redirect_to
                redirects.append({'from': entry.title, 'to': target})
                tp = store.page(target)
                entries[i] = _Entry(tp, split_title(target)[0], target)
        if redirects:
            query['redirects'] = redirects
    return entries, gen_cont


def _apply_props(ctx: Ctx, entries: list[_Entry],
                 out: dict[int, dict[str, Any]]) -> dict[str, str]:
    """Merge prop module output into page entries; return prop continuation."""
    props = ctx.multi('prop')
    cont: dict[str, str] = {}
    for prop in props:
        if prop not in _PROP_MODULES:
            ctx.warn('query', f'Unrecognized value for parameter "prop": {prop}.')
    good = sorted((e for e in entries if e.page is not None),
                  key=lambda e: e.pageid or 0)
    single = len(good) == 1
    for entry in entries:
        if entry.page is None and entry.invalid is None:
            if 'info' in props:
                out[id(entry)].update(api_props.missing_info(ctx, entry.ns or 0))
            if 'imageinfo' in props and entry.ns == 6:
                out[id(entry)].update(imageinfo(ctx, None))
    for entry in good:
        page, row = entry.page, out[id(entry)]
        assert page is not None
        if 'info' in props:
            row.update(api_props.info(ctx, page))
        if 'imageinfo' in props and page.ns == 6:
            row.update(imageinfo(ctx, page))
        if 'revisions' in props:
            row.update(api_props.revisions(ctx, page, single))
        if 'categoryinfo' in props:
            catinfo = api_props.categoryinfo(ctx, page)
            if catinfo is not None:
                row['categoryinfo'] = catinfo
        if 'templates' in props:
            rows = api_props.templates(ctx, page)
            if rows:
                row['templates'] = rows
        if 'pageprops' in props:
            found = api_props.pageprops(ctx, page)
            if found:
                row['pageprops'] = found
    if 'categories' in props:
        cont.update(_categories(ctx, good, out))
    cont.update(ctx.pending_continue)
    return cont


def _categories(ctx: Ctx, good: list[_Entry], out: dict[int, dict[str, Any]]
                ) -> dict[str, str]:
    """``prop=categories`` across pages with ``cllimit``/``clcontinue``."""
    budget = ctx.limit('cllimit', 10)
    start_pid, start_cat = 0, ''
    if ctx.get('clcontinue'):
        try:
            pid, cat = (ctx.get('clcontinue') or '').split('|', 1)
            start_pid, start_cat = int(pid), 'Category:' + cat.replace('_', ' ')
        except ValueError:
            raise ApiError('badcontinue', 'Invalid continue param. You should '
                           'pass the original value returned by the previous '
                           'query.') from None
    for entry in good:
        page = entry.page
        assert page is not None
        if page.pageid < start_pid:
            continue
        rows = api_props.categories(ctx, page)
        if page.pageid == start_pid:
            rows = [r for r in rows if r['title'] >= start_cat]
        if not rows:
            continue
        take = rows[:budget]
        out[id(entry)].setdefault('categories', []).extend(take)
        budget -= len(take)
        if len(rows) > len(take) or budget == 0 and entry is not good[-1]:
            rest = rows[len(take):]
            if rest:
                name = rest[0]['title'].split(':', 1)[1].replace(' ', '_')
                return {'clcontinue': f'{page.pageid}|{name}'}
            nxt = good[good.index(entry) + 1]
            nxt_rows = api_props.categories(ctx, nxt.page)  # type: ignore[arg-type]
            if nxt_rows:
                name = nxt_rows[0]['title'].split(':', 1)[1].replace(' ', '_')
                return {'clcontinue': f'{nxt.pageid}|{name}'}
    return {}


def _page_row(ctx: Ctx, entry: _Entry) -> dict[str, Any]:
    if entry.invalid is not None:
        return {'title': entry.title, 'invalidreason': entry.invalid,
                'invalid': True}
    if entry.page is None and entry.title is None:
        return {'pageid': entry.pageid, 'missing': True}
    if entry.page is None:
        return {'ns': entry.ns, 'title': entry.title, 'missing': True}
    return {'pageid': entry.pageid, 'ns': entry.ns, 'title': entry.title}


def query(ctx: Ctx) -> dict[str, Any]:
    """Answer ``action=query``."""
    q: dict[str, Any] = {}
    body: dict[str, Any] = {}
    _meta(ctx, q)
    list_cont: dict[str, str] = {}
    for name in ctx.multi('list'):
        if name not in LISTS:
            raise ApiError('badvalue', 'Unrecognized value for parameter '
                           f'"list": {name}.')
        prefix, func = LISTS[name]
        result = func(ctx, prefix)
        q[name] = result.items
        q.update(result.extra)
        list_cont.update(result.cont or {})
    has_pageset = any(k in ctx.params for k in ('titles', 'pageids', 'revids',
                                                 'generator'))
    prop_cont: dict[str, str] = {}
    gen_cont: dict[str, str] = {}
    if has_pageset:
        entries, gen_cont = _pageset(ctx, q)
        # Missing entries get negative fake ids, like MediaWiki.
        fake = -1
        keyed: list[tuple[str, _Entry]] = []
        for entry in entries:
            if entry.page is None and entry.title is not None:
                keyed.append((str(fake), entry))
                fake -= 1
            elif entry.page is None:
                keyed.append((str(entry.pageid), entry))
        keyed += [(str(e.pageid), e) for e in sorted(
            (e for e in entries if e.page is not None), key=lambda e: e.pageid or 0)]
        rows = {id(e): _page_row(ctx, e) for _, e in keyed}
        prop_cont = _apply_props(ctx, entries, rows)
        if keyed:
            if ctx.fv == 2:
                q['pages'] = [rows[id(e)] for _, e in keyed]
            else:
                q['pages'] = {k: rows[id(e)] for k, e in keyed}
            if ctx.flag('indexpageids'):
                q['pageids'] = [k for k, _ in keyed]
    if prop_cont:
        # Props not finished: repeat the same generator batch (MediaWiki keeps
        # the generator's own continue values) and continue the props.
        cont = dict(prop_cont)
        for key, value in ctx.params.items():
            if key.startswith('g') and key.endswith('continue'):
                cont[key] = value
        busy = {_CONT_MODULE.get(k[:-8], k[:-8]) for k in prop_cont}
        cont['continue'] = '||' + '|'.join(
            sorted(set(ctx.multi('prop')) - busy))
        body['continue'] = cont
    elif gen_cont or list_cont:
        cont = {**gen_cont, **list_cont}
        cont['continue'] = (next(iter(gen_cont)) if gen_cont else '-') + '||'
        body['continue'] = cont
    if not prop_cont:
        body['batchcomplete'] = True
    if q:
        body['query'] = q
    return body
