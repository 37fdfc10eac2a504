"""``list=`` modules (also usable as ``generator=``): logevents, allimages,
categorymembers, search, allpages, allusers, users, blocks.

Each function gets the request context and the parameter prefix (``le`` or
``gle`` when used as a generator) and returns a :class:`ListResult`.
Continuation values are the cursor of the *first row not yet returned*, and
the next request resumes inclusively from it, as MediaWiki does; that keeps
rows sharing one timestamp from being skipped or repeated.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .apibase import ApiError, Ctx
from .imageinfo import file_props
from .model import LogEvent, Page, parse_iso, split_title


@dataclass
class ListResult:
    """Rows of a list module, the pages they name, and continuation."""

    items: list[dict[str, Any]]
    pages: list[Page] = field(default_factory=list)
    cont: dict[str, str] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _ts14(iso_ts: str) -> str:
    return parse_iso(iso_ts).strftime('%Y%m%d%H%M%S')


def _bad_continue(prefix: str) -> ApiError:
    return ApiError('badcontinue', 'Invalid continue param. You should pass '
                    'the original value returned by the previous query.')


def _ts_param(ctx: Ctx, name: str) -> str | None:
    value = ctx.get(name)
    if not value:
        return None
    try:
        return _ts14(value)
    except ValueError:
        raise ApiError('badtimestamp', f'Invalid value "{value}" for timestamp '
                       f'parameter "{name}".') from None


_LOG_ACTIONS = {
    'upload': ('upload', 'overwrite', 'revert'),
    'delete': ('delete', 'restore', 'revision', 'event', 'delete_redir'),
    'move': ('move', 'move_redir'),
    'protect': ('protect', 'modify', 'unprotect', 'move_prot'),
    'block': ('block', 'reblock', 'unblock'),
    'newusers': ('newusers', 'create', 'create2', 'autocreate', 'byemail'),
    'patrol': ('patrol', 'autopatrol'),
    'tag': ('update',),
}


def logevents(ctx: Ctx, p: str) -> ListResult:
    """``list=logevents`` ordered by (timestamp, logid)."""
    store = ctx.wiki.store
    props = set(ctx.multi(p + 'prop') or
                ['ids', 'title', 'type', 'user', 'timestamp', 'comment',
                 'details'])
    letype, action = ctx.get(p + 'type'), None
    if ctx.get(p + 'action'):
        letype, _, action = ctx.text(p + 'action').partition('/')
        if action not in _LOG_ACTIONS.get(letype, ()) and action != '*':
            raise ApiError('badvalue', 'Unrecognized value for parameter '
                           f'"{p}action": {ctx.get(p + "action")}.')
    newer = ctx.get(p + 'dir', 'older') == 'newer'
    start, end = _ts_param(ctx, p + 'start'), _ts_param(ctx, p + 'end')
    limit = ctx.limit(p + 'limit', 10)
    title = ctx.get(p + 'title')
    if title:
        title = split_title(title)[1]
    user = ctx.get(p + 'user')
    namespaces = {int(n) for n in ctx.multi(p + 'namespace')}

    def keep(ev: LogEvent) -> bool:
        ts = _ts14(ev.timestamp)
        if letype and ev.type != letype:
            return False
        if action and action != '*' and ev.action != action:
            return False
        if title and ev.title != title:
            return False
        if user and ev.user != user:
            return False
        if namespaces and ev.ns not in namespaces:
            return False
        lo, hi = (start, end) if newer else (end, start)
        return not ((lo and ts < lo) or (hi and ts > hi))

    rows = [e for e in store.upload_events() if keep(e)]
    rows.sort(key=lambda e: (_ts14(e.timestamp), e.logid), reverse=not newer)
    cont = ctx.get(p + 'continue')
    if cont:
        try:
            cts, cid = cont.split('|')
            cursor = (cts, int(cid))
        except ValueError:
            raise _bad_continue(p) from None
        rows = [e for e in rows if ((_ts14(e.timestamp), e.logid) >= cursor)
                == newer or (_ts14(e.timestamp), e.logid) == cursor]
    batch, rest = rows[:limit], rows[limit:]
    items = []
    for ev in batch:
        live = store.page(ev.title)
        item: dict[str, Any] = {}
        if 'ids' in props:
            item['logid'] = ev.logid
        if 'title' in props:
            item['ns'] = ev.ns
            item['title'] = ev.title
        if 'ids' in props:
            item['pageid'] = live.pageid if live else 0
            item['logpage'] = ev.logpage
        if 'details' in props:
            item['params'] = dict(ev.params)
        if 'type' in props:
            item['type'] = ev.type
            item['action'] = ev.action
        if 'user' in props:
            item['user'] = ev.user
        if 'userid' in props:
            item['userid'] = ev.userid
        if 'timestamp' in props:
            item['timestamp'] = ev.timestamp
        if 'comment' in props:
            item['comment'] = ev.comment
        if 'parsedcomment' in props:
            item['parsedcomment'] = ev.comment
        if 'tags' in props:
            item['tags'] = list(ev.tags)
        items.append(item)
    pages = [pg for pg in (store.page(ev.title) for ev in batch) if pg]
    out = ListResult(items, pages)
    if rest:
        out.cont = {p + 'continue': f'{_ts14(rest[0].timestamp)}|{rest[0].logid}'}
    return out


def allimages(ctx: Ctx, p: str) -> ListResult:
    """``list=allimages`` sorted by name or by (timestamp, name)."""
    store = ctx.wiki.store
    by_time = ctx.get(p + 'sort', 'name') == 'timestamp'
    direction = ctx.get(p + 'dir', 'ascending')
    descending = direction in ('descending', 'older')
    limit = ctx.limit(p + 'limit', 10)
    files = store.files()
    if by_time:
        start, end = _ts_param(ctx, p + 'start'), _ts_param(ctx, p + 'end')
        def key(pg: Page) -> tuple[str, str]:
            assert pg.file is not None
            return _ts14(pg.file.timestamp), pg.file.url_name

        lo, hi = (end, start) if descending else (start, end)
        files = [f for f in files if not ((lo and key(f)[0] < lo) or
                                          (hi and key(f)[0] > hi))]
        user = ctx.get(p + 'user')
        if user:
            files = [f for f in files if f.file and f.file.user == user]
    else:
        def key(pg: Page) -> tuple[str, str]:
            assert pg.file is not None
            return pg.file.url_name, ''

        lo = ctx.get(p + 'from')
        hi = ctx.get(p + 'to')
        if descending:
            lo, hi = hi, lo
        if lo:
            files = [f for f in files if key(f)[0] >= lo.replace(' ', '_')]
        if hi:
            files = [f for f in files if key(f)[0] <= hi.replace(' ', '_')]
        prefix = ctx.get(p + 'prefix')
        if prefix:
            files = [f for f in files
                     if f.file and f.file.url_name.startswith(prefix.replace(' ', '_'))]
    mimes = set(ctx.multi(p + 'mime'))
    if mimes:
        files = [f for f in files if f.file and f.file.mime in mimes]
    files.sort(key=key, reverse=descending)
    cont = ctx.get(p + 'continue')
    if cont:
        cursor = tuple(cont.split('|', 1)) if by_time else (cont, '')
        if by_time and len(cursor) != 2:
            raise _bad_continue(p)
        files = [f for f in files if (key(f) <= cursor) == descending
                 or key(f) == cursor]
    batch, rest = files[:limit], files[limit:]
    props = set(ctx.multi(p + 'prop') or ['timestamp', 'url'])
    items = []
    for pg in batch:
        assert pg.file is not None
        item: dict[str, Any] = {'name': pg.file.url_name}
        item.update(file_props(ctx, pg, props, None, None))
        item['ns'] = 6
        item['title'] = pg.title
        items.append(item)
    out = ListResult(items, batch)
    if rest:
        k = key(rest[0])
        out.cont = {p + 'continue': f'{k[0]}|{k[1]}' if by_time else k[0]}
    return out


def _offset_page(ctx: Ctx, p: str, pages: list[Page],
                 item: Callable[[Page], dict[str, Any]]) -> ListResult:
    """Plain offset continuation (``cmcontinue``/``apcontinue`` as a title)."""
    limit = ctx.limit(p + 'limit', 10)
    cont = ctx.get(p + 'continue')
    if cont:
        try:
            pages = [pg for pg in pages if pg.pageid >= int(cont.rsplit('|', 1)[-1])
                     ] if cont.rsplit('|', 1)[-1].isdigit() else \
                [pg for pg in pages if pg.title >= cont]
        except ValueError:
            raise _bad_continue(p) from None
    batch, rest = pages[:limit], pages[limit:]
    out = ListResult([item(pg) for pg in batch], batch)
    if rest:
        out.cont = {p + 'continue': f'page|{rest[0].pageid:08x}|{rest[0].pageid}'
                    if p.endswith('cm') else rest[0].title}
    return out


def categorymembers(ctx: Ctx, p: str) -> ListResult:
    """``list=categorymembers`` (sorted by page id as a stable sort key)."""
    store = ctx.wiki.store
    if ctx.get(p + 'pageid'):
        cat = store.page_by_id(ctx.integer(p + 'pageid', 0))
        title = cat.title if cat else None
        if title is None:
            raise ApiError('nosuchpageid', f'There is no page with ID '
                           f'{ctx.get(p + "pageid")}.')
    else:
        ctx.require(p + 'title')
        try:
            ns, title = split_title(ctx.text(p + 'title'))
        except ValueError:
            ns, title = -1, ''
        if ns != 14:
            raise ApiError('invalidcategory',
                           'The category name you entered is not valid.')
    members = sorted(store.category_members(title), key=lambda pg: pg.pageid)
    types = set(ctx.multi(p + 'type') or ['page', 'subcat', 'file'])
    namespaces = {int(n) for n in ctx.multi(p + 'namespace')}
    members = [m for m in members
               if ({14: 'subcat', 6: 'file'}.get(m.ns, 'page') in types)
               and (not namespaces or m.ns in namespaces)]
    props = set(ctx.multi(p + 'prop') or ['ids', 'title'])

    def item(pg: Page) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if 'ids' in props:
            out['pageid'] = pg.pageid
        if 'title' in props:
            out.update(ns=pg.ns, title=pg.title)
        if 'sortkey' in props:
            out['sortkey'] = pg.title.split(':', 1)[-1].upper().encode().hex()
        if 'sortkeyprefix' in props:
            out['sortkeyprefix'] = ''
        if 'type' in props:
            out['type'] = {14: 'subcat', 6: 'file'}.get(pg.ns, 'page')
        if 'timestamp' in props:
            out['timestamp'] = pg.revisions[0].timestamp
        return out

    return _offset_page(ctx, p, members, item)


# WikibaseCirrusSearch's keyword: haswbstatement:P31=Q5, haswbstatement:"P373=Name with
# spaces", alternatives with | (P31=Q5|P31=Q6), or a property alone (any value).
_HASWBSTATEMENT = re.compile(r'haswbstatement:(?:"([^"]*)"|(\S+))', re.IGNORECASE)


def _statement_values(data: dict[str, Any], pid: str) -> list[str] | None:
    """Values of *pid*'s non-deprecated statements as haswbstatement compares them
    (an item's id, a string's text); None when the entity has no such statement."""
    found = [st for st in data.get('claims', data.get('statements', {})).get(pid, [])
             if st.get('rank') != 'deprecated']
    if not found:
        return None
    out = []
    for st in found:
        value = st['mainsnak'].get('datavalue', {}).get('value')
        out.append(value.get('id', '') if isinstance(value, dict) else str(value))
    return out


def _has_statement(store: Any, page: Page, expression: str) -> bool:
    """Whether the entity on *page* matches one alternative of *expression*."""
    eid = page.title.split(':', 1)[-1]
    if store.entity_page(eid) is not page:
        return False
    data = store.entity_data(page) or {}
    for alternative in expression.split('|'):
        pid, sep, value = alternative.partition('=')
        values = _statement_values(data, pid.strip().upper())
        if values is not None and (not sep or value in values):
            return True
    return False


def search(ctx: Ctx, p: str) -> ListResult:
    """``list=search``: case-insensitive substring match on titles/text, and
    WikibaseCirrusSearch's ``haswbstatement:`` (every keyword must match)."""
    store = ctx.wiki.store
    ctx.require(p + 'search')
    query = ctx.text(p + 'search').strip()
    statements = [m.group(1) if m.group(1) is not None else m.group(2)
                  for m in _HASWBSTATEMENT.finditer(query)]
    query = _HASWBSTATEMENT.sub('', query).strip()
    in_text = ctx.get(p + 'what') == 'text'
    for keyword in ('intitle:', 'file:'):
        if query.lower().startswith(keyword):
            query = query[len(keyword):].strip()
    namespaces = {int(n) for n in (ctx.multi(p + 'namespace') or ['0'])}
    needle = query.lower().strip('"')
    hits = [pg for pg in store.iter_pages()
            if pg.ns in namespaces and (
                needle in pg.title.split(':', 1)[-1].lower()
                or (in_text and needle in pg.text.lower()))
            and all(_has_statement(store, pg, s) for s in statements)]
    limit = ctx.limit(p + 'limit', 10)
    offset = ctx.integer(p + 'offset', 0)
    batch = hits[offset:offset + limit]
    items = [{'ns': pg.ns, 'title': pg.title, 'pageid': pg.pageid,
              'size': pg.latest.size(), 'wordcount': len(pg.text.split()),
              'snippet': '', 'timestamp': pg.latest.timestamp}
             for pg in batch]
    out = ListResult(items, batch)
    if offset + limit < len(hits):
        out.cont = {p + 'offset': str(offset + limit)}
    out.extra = {'searchinfo': {'totalhits': len(hits)}}
    return out


def allpages(ctx: Ctx, p: str) -> ListResult:
    """``list=allpages`` in one namespace, by title."""
    store = ctx.wiki.store
    ns = ctx.integer(p + 'namespace', 0)
    prefix = (ctx.get(p + 'prefix') or '').replace('_', ' ')
    start = (ctx.get(p + 'from') or '').replace('_', ' ')
    redir = ctx.get(p + 'filterredir', 'all')
    pages = [pg for pg in store.iter_pages(ns)
             if pg.title.split(':', 1)[-1 if ns else 0].startswith(prefix)
             and pg.title.split(':', 1)[-1 if ns else 0] >= start
             and (redir == 'all' or (redir == 'redirects') == bool(pg.redirect_to))]
    return _offset_page(ctx, p, pages, lambda pg: {
        'pageid': pg.pageid, 'ns': pg.ns, 'title': pg.title})


def allusers(ctx: Ctx, p: str) -> ListResult:
    """``list=allusers`` by name."""
    store = ctx.wiki.store
    start = ctx.get(p + 'from') or ctx.get(p + 'prefix') or ''
    prefix = ctx.get(p + 'prefix') or ''
    props = set(ctx.multi(p + 'prop'))
    users = sorted((u for u in store.users.values()
                    if u.name >= start and u.name.startswith(prefix)),
                   key=lambda u: u.name)[:ctx.limit(p + 'limit', 10)]
    items = []
    for u in users:
        item: dict[str, Any] = {'userid': u.userid, 'name': u.name}
        if 'groups' in props:
            item['groups'] = ['*', 'user', 'autoconfirmed'] + u.groups
        if 'editcount' in props:
            item['editcount'] = u.editcount
        if 'registration' in props:
            item['registration'] = u.registration
        items.append(item)
    return ListResult(items)


def users(ctx: Ctx, p: str) -> ListResult:
    """``list=users`` by name (``usprop=groups|blockinfo``): what a web tool re-reads to see
    a block or a lost group after login. Groups as the OAuth profile gives them."""
    store = ctx.wiki.store
    props = set(ctx.multi(p + 'prop'))
    items: list[dict[str, Any]] = []
    for name in ctx.multi(p + 'users'):
        u = store.user(name)
        if u is None:
            items.append({'name': name, 'missing': True})
            continue
        item: dict[str, Any] = {'userid': u.userid, 'name': u.name}
        if 'groups' in props:
            item['groups'] = ['*', 'user'] + [g for g in u.groups if g not in ('*', 'user')]
        if 'blockinfo' in props and u.blocked:
            item.update({'blockid': block_id(u), 'blockedby': 'Admin', 'blockreason': u.block_reason,
                         'blockexpiry': 'infinite', 'blockpartial': u.block_partial})
        items.append(item)
    return ListResult(items)


def block_id(user: Any) -> int:
    """The id of a user's block (one per user here): fixed per account."""
    return 1000 + int(user.userid)


def blocks(ctx: Ctx, p: str) -> ListResult:
    """``list=blocks`` for named users (``bkusers``; ``bkprop=id|user|reason|flags|
    restrictions``): a partial block's ``restrictions`` in MediaWiki's format, ``[]`` for a
    sitewide block (PHP's empty array), ``partial`` with ``flags``."""
    store = ctx.wiki.store
    props = set(ctx.multi(p + 'prop') or ['id', 'user', 'by', 'timestamp', 'expiry', 'reason', 'flags'])
    items: list[dict[str, Any]] = []
    for name in ctx.multi(p + 'users'):
        u = store.user(name)
        if u is None or not u.blocked:
            continue
        item: dict[str, Any] = {}
        if 'id' in props:
            item['id'] = block_id(u)
        if 'user' in props:
            item.update({'user': u.name, 'userid': u.userid})
        if 'reason' in props:
            item['reason'] = u.block_reason
        if 'expiry' in props:
            item['expiry'] = 'infinity'
        if 'flags' in props:
            item.update({'automatic': False, 'anononly': False, 'nocreate': True, 'autoblock': True,
                         'noemail': False, 'hidden': False, 'allowusertalk': True,
                         'partial': u.block_partial})
        if 'restrictions' in props:
            item['restrictions'] = dict(u.block_restrictions) if u.block_partial else []
        items.append(item)
    return ListResult(items)


LISTS: dict[str, tuple[str, Callable[[Ctx, str], ListResult]]] = {
    'logevents': ('le', logevents),
    'allimages': ('ai', allimages),
    'categorymembers': ('cm', categorymembers),
    'search': ('sr', search),
    'allpages': ('ap', allpages),
    'allusers': ('au', allusers),
    'users': ('us', users),
    'blocks': ('bk', blocks),
}
