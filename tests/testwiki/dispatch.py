"""API request dispatch: sessions, faults, assertions, module routing, output.

Kept apart from the HTTP handler so it can be read as "what happens to one
``api.php`` request": record it, maybe inject a fault, check ``assert``, run
the module, shape the JSON for the requested formatversion.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import api_edit, api_query, api_wikibase, api_write, auth
from .apibase import ApiError, Ctx, add_warnings, error_body, to_formatversion1
from .faults import Fault
from .model import now_iso
from .paraminfo import paraminfo
from .recording import WRITE_ACTIONS, RecordedRequest

if TYPE_CHECKING:
    from .server import TestWiki

Module = Callable[[Ctx], dict[str, Any]]
MODULES: dict[str, Module] = {
    'query': api_query.query,
    'wbgetentities': api_wikibase.wbgetentities,
    'login': auth.login,
    'logout': auth.logout,
    'wbsetclaim': api_write.wbsetclaim,
    'wbcreateclaim': api_write.wbcreateclaim,
    'wbsetclaimvalue': api_write.wbsetclaimvalue,
    'wbremoveclaims': api_write.wbremoveclaims,
    'wbeditentity': api_write.wbeditentity,
    'edit': api_edit.edit,
    'purge': api_edit.purge,
    'paraminfo': lambda ctx: paraminfo(ctx.multi('modules'), ctx.fv),
}


class HttpFault(Exception):
    """A non-API failure answered with a bare HTTP status."""

    def __init__(self, status: int, body: str, headers: dict[str, str]) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers


def request_kinds(params: dict[str, str]) -> set[str]:
    """Fault kinds this request matches."""
    action = params.get('action', '')
    kinds = {'api', '*', action}
    for key in ('prop', 'list', 'meta', 'generator'):
        kinds.update(v for v in params.get(key, '').split('|') if v)
    if action in WRITE_ACTIONS:
        kinds.add('write')
    return kinds


def request_titles(params: dict[str, str]) -> set[str]:
    """Titles/entity ids a request is about (for title-scoped faults)."""
    from .model import split_title
    found: set[str] = set()
    for key in ('titles', 'title', 'ids', 'entity', 'id', 'letitle'):
        for value in params.get(key, '').split('|'):
            if not value:
                continue
            found.add(value)
            try:
                found.add(split_title(value)[1])
            except ValueError:
                pass
    claim = params.get('claim', '')
    if not claim.startswith('{'):
        found.update(v.split('$', 1)[0] for v in claim.split('|') if '$' in v)
    try:
        guid = json.loads(claim).get('id', '') if claim.startswith('{') else ''
        if guid:
            found.add(guid.split('$', 1)[0])
    except ValueError:
        pass
    return found


def _apply_fault(wiki: TestWiki, fault: Fault, ctx: Ctx) -> None:
    """Raise or act out *fault* before the module runs."""
    if fault.error == 'maxlag':
        lag = fault.lag
        retry = fault.retry_after if fault.retry_after is not None \
            else max(int(lag), 5)
        raise ApiError('maxlag', f'Waiting for db1163: {lag:g} seconds lagged.',
                       host='db1163', lag=lag, type='db',
                       headers={'Retry-After': str(retry),
                                'X-Database-Lag': str(int(lag))})
    if fault.error in ('http500', 'http503', 'http429'):
        status = int(fault.error[4:])
        headers = {}
        if status in (503, 429):
            headers['Retry-After'] = str(fault.retry_after or 1)
        raise HttpFault(status, f'<!DOCTYPE html><html><head><title>Wikimedia '
                        f'Error</title></head><body><p>Error {status}: '
                        'our servers are currently under maintenance or '
                        'experiencing a technical issue.</p></body></html>',
                        headers)
    if fault.error == 'timeout':
        fault.stall(wiki.stopping)
        return
    if fault.error == 'ratelimited':
        raise ApiError('ratelimited', 'As an anti-abuse measure, you are '
                       'limited from performing this action too many times in '
                       'a short space of time, and you have exceeded this '
                       'limit. Please try again in a few minutes.')
    if fault.error == 'badtoken':
        ctx.session.rotate()   # the client's cached tokens are now stale
        raise ApiError('badtoken', 'Invalid CSRF token.')
    if fault.error == 'readonly':
        raise ApiError('readonly', 'The wiki is currently in read-only mode.',
                       readonlyreason='Database maintenance (test wiki).')
    if fault.error == 'editconflict':
        # Someone else saves the entity first, so the client's baserevid is
        # now stale and the conflict check answers editconflict (strictly for
        # this request: Wikibase would patch a change onto that null revision).
        ctx.strict_base = True
        for target in request_titles(ctx.params):
            page = wiki.store.entity_page(target) or wiki.store.page(target)
            if page is not None:
                wiki.store.add_revision(page, {}, user='Concurrent Editor',
                                        comment='/* wbeditentity-update:0| */')
                return
        raise ApiError('editconflict', 'Edit conflict.', messages=[{
            'name': 'edit-conflict', 'parameters': [],
            'html': {'*': 'Edit conflict.'}}])
    if fault.error == 'delete_file':
        targets = [fault.title] if fault.title else \
            [t for t in request_titles(ctx.params) if t.startswith('File:')]
        for title in targets:
            if title and wiki.store.page(title) is not None:
                wiki.delete_file(title)


def handle_api(wiki: TestWiki, method: str, path: str, params: dict[str, str],
               headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """Answer one ``api.php`` request: (status, headers, body)."""
    session = wiki.sessions.get(headers.get('cookie'))
    ctx = Ctx(wiki=wiki, params=params, method=method, session=session)
    record = RecordedRequest(method=method, path=path, params=dict(params),
                             host=headers.get('host', ''),
                             user_agent=headers.get('user-agent', ''))
    wiki.recorder.add_request(record)
    out_headers = {'Content-Type': 'application/json; charset=utf-8',
                   'Cache-Control': 'private, must-revalidate, max-age=0',
                   'X-Content-Type-Options': 'nosniff'}
    if session.new:
        session.new = False
        out_headers['Set-Cookie'] = (f'{auth.COOKIE}={session.id}; path=/; '
                                     'HttpOnly')
    action = params.get('action')
    try:
        fault = wiki.faults.take(request_kinds(params), params,
                                 request_titles(params))
        if fault is not None:
            _apply_fault(wiki, fault, ctx)
        if action is None:
            raise ApiError('help', 'The API help page.')
        module = MODULES.get(action)
        if module is None:
            raise ApiError('badvalue', 'Unrecognized value for parameter '
                           f'"action": {action}.')
        auth.check_assert(ctx)
        if action in WRITE_ACTIONS:
            # read-modify-write of an entity must not interleave with another
            with wiki.store.lock:
                body = module(ctx)
        else:
            body = module(ctx)
        if fault is not None and fault.error == 'hold_response':
            # applied, but the answer is late (until released, or server stop)
            fault.stall(wiki.stopping)
        status = 200
    except HttpFault as exc:
        record.status = exc.status
        return exc.status, {'Content-Type': 'text/html; charset=utf-8',
                            **exc.headers}, exc.body.encode()
    except ApiError as exc:
        record.error = exc.code
        status = exc.status
        out_headers.update(exc.headers)
        out_headers['MediaWiki-API-Error'] = exc.code
        body = error_body(exc, ctx.fv, wiki.api_url)
    add_warnings(body, ctx)
    if 'requestid' in params:
        body['requestid'] = params['requestid']
    if ctx.flag('curtimestamp'):
        body['curtimestamp'] = now_iso()
    if ctx.fv == 1:
        body = to_formatversion1(body)
    record.status = status
    ascii_only = ctx.fv == 1 and not ctx.flag('utf8')
    data = json.dumps(body, ensure_ascii=ascii_only).encode('utf-8')
    return status, out_headers, data
