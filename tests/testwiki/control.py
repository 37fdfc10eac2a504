"""The ``/_control/…`` HTTP endpoint and runtime uploads.

Lets a test that drives the bot in a subprocess do what in-process tests do
through the Python API: inject faults, add uploads, delete files, read the
recorded edits/requests and the media counters.  All bodies are JSON.
"""
from __future__ import annotations

import base64
import contextlib
import io
import json
from typing import TYPE_CHECKING, Any

from PIL import Image, ImageDraw

from .model import FileInfo, now_iso, split_title

if TYPE_CHECKING:
    from .server import TestWiki, UploadResult

_MIME = {'jpg': 'image/jpeg', 'jpeg': 'image/jpeg', 'png': 'image/png',
         'gif': 'image/gif', 'webp': 'image/webp', 'tif': 'image/tiff',
         'tiff': 'image/tiff'}
_PIL_FORMAT = {'image/jpeg': 'JPEG', 'image/png': 'PNG', 'image/gif': 'GIF',
               'image/webp': 'WEBP', 'image/tiff': 'TIFF'}


def make_image(ext: str, width: int = 640, height: int = 480,
               color: str = '#3a7bd5') -> bytes:
    """Draw a simple picture (background, sun, hill) in the format of *ext*."""
    img = Image.new('RGB', (width, height), color)
    draw = ImageDraw.Draw(img)
    draw.ellipse((width * 0.65, height * 0.1, width * 0.85, height * 0.1
                  + width * 0.2), fill='#ffd34e')
    draw.polygon([(0, height), (width * 0.4, height * 0.45), (width, height)],
                 fill='#2e7d32')
    out = io.BytesIO()
    img.save(out, _PIL_FORMAT.get(_MIME.get(ext.lower(), 'image/jpeg'), 'JPEG'))
    return out.getvalue()


def default_wikitext(name: str, user: str, date: str) -> str:
    """Commons-style description page for a runtime upload."""
    stem = name.rsplit('.', 1)[0]
    return ('=={{int:filedesc}}==\n{{Information\n'
            f'|description={{{{en|1={stem}}}}}\n|date={date[:10]}\n'
            f'|source={{{{own}}}}\n|author=[[User:{user}|{user}]]\n}}}}\n\n'
            '=={{int:license-header}}==\n{{self|cc-by-sa-4.0}}\n\n'
            '[[Category:Uploaded by test]]\n')


def upload(wiki: TestWiki, name: str, data: bytes | None = None, *,
           wikitext: str | None = None, user: str = 'Alice Uploader',
           timestamp: str | None = None, comment: str = '',
           mediainfo: dict[str, Any] | None = None, width: int = 640,
           height: int = 480, color: str = '#3a7bd5', mime: str | None = None,
           hidden_categories: list[str] | None = None,
           tags: list[str] | None = None) -> UploadResult:
    """Upload ``File:name`` now (or at *timestamp*); overwrite if it exists."""
    from .server import UploadResult
    name = split_title('File:' + name)[1].split(':', 1)[1]
    ext = name.rsplit('.', 1)[-1].lower()
    if data is None:
        data = make_image(ext, width, height, color)
    mime = mime or _MIME.get(ext, 'application/octet-stream')
    # non-images (PDF, video) keep the given size
    with contextlib.suppress(Exception), Image.open(io.BytesIO(data)) as img:
        width, height = img.size
    ts = timestamp or now_iso()
    account = wiki.store.user(user)
    info = FileInfo(name=name, data=data, mime=mime, width=width,
                    height=height, timestamp=ts, user=user,
                    userid=account.userid if account else 0,
                    comment=comment or 'Uploaded own work with UploadWizard')
    hidden = list(hidden_categories or ['CC-BY-SA-4.0', 'Self-published work'])
    with wiki.store.lock:
        wiki.store.hidden_categories.update(hidden)
        page, event = wiki.store.upload(
            name, info, wikitext=wikitext or default_wikitext(name, user, ts),
            mediainfo=mediainfo, template_categories=hidden,
            tags=tags or ['uploadwizard'])
    return UploadResult(title=page.title, pageid=page.pageid, logid=event.logid,
                        timestamp=ts, action=event.action)


def _restrictions(wiki: TestWiki, raw: Any) -> dict[str, Any]:
    """A partial block's restrictions in ``list=blocks``' format, from the control's body:
    pages as titles (resolved to the wiki's page; one it does not have gets id 0, which
    MediaWiki never answers but lets a test name a file only the queue knows) or as
    ``{"id", "ns", "title"}`` objects, kept as given."""
    if not isinstance(raw, dict):
        raise ValueError('partial must be an object: {"pages": [...], "namespaces": [...], "actions": [...]}')
    pages = []
    for page in raw.get('pages') or ():
        if isinstance(page, dict):
            pages.append({'id': int(page['id']), 'ns': int(page['ns']), 'title': str(page['title'])})
            continue
        ns, title = split_title(str(page))
        found = wiki.store.page(title)
        pages.append({'id': found.pageid if found else 0, 'ns': ns, 'title': title})
    restrictions: dict[str, Any] = {}
    if pages:
        restrictions['pages'] = pages
    if raw.get('namespaces'):
        restrictions['namespaces'] = [int(n) for n in raw['namespaces']]
    if raw.get('actions'):
        restrictions['actions'] = [str(a) for a in raw['actions']]
    return restrictions


def handle(wiki: TestWiki, method: str, path: str, raw: bytes
           ) -> tuple[int, dict[str, str], bytes]:
    """Answer one control request."""
    from .server import dump
    headers = {'Content-Type': 'application/json'}
    try:
        body: dict[str, Any] = json.loads(raw or b'{}')
    except ValueError:
        return 400, headers, dump({'error': 'body must be JSON'})
    route = path[len('/_control/'):].strip('/')
    try:
        if route == 'state':
            return 200, headers, dump(wiki.control_state())
        if route == 'faults' and method == 'POST':
            fault = wiki.faults.add(body.pop('kind'), body.pop('error'),
                                    body.pop('times', 1), **body)
            return 200, headers, dump(fault.to_json())
        if route == 'faults/release' and method == 'POST':
            # {"id": n}: send a held answer (hold_response/timeout) now
            return 200, headers, dump(wiki.faults.release(int(body['id'])).to_json())
        if route == 'faults' and method == 'DELETE':
            wiki.faults.clear()
            return 200, headers, dump({'cleared': True})
        if route == 'uploads' and method == 'POST':
            data = base64.b64decode(body.pop('data_b64')) \
                if 'data_b64' in body else None
            result = upload(wiki, body.pop('name'), data, **body)
            return 200, headers, dump(result.__dict__)
        if route == 'block' and method == 'POST':
            # {"user": name, "blocked": true|false, "groups": [...], "reason": "...",
            # "partial": {"pages": [...], "namespaces": [...], "actions": [...]}} (the last
            # three optional): what an admin or a bureaucrat does to an account, seen by
            # the OAuth profile, list=users (the reason as ``blockreason``, ``blockpartial``)
            # and list=blocks (the restrictions). Without "partial" a block is sitewide.
            account = wiki.store.user(body['user'])
            if account is None:
                raise KeyError(f"no user {body['user']!r}")
            partial = body.get('partial')
            restrictions = _restrictions(wiki, partial) if partial is not None else {}
            with wiki.store.lock:
                account.blocked = bool(body.get('blocked', True))
                if 'groups' in body:
                    account.groups = [str(g) for g in body['groups']]
                if 'reason' in body:
                    account.block_reason = str(body['reason'])
                account.block_partial = partial is not None and account.blocked
                account.block_restrictions = restrictions if account.block_partial else {}
            done = {'user': account.name, 'blocked': account.blocked, 'groups': account.groups}
            if account.block_partial:
                done['restrictions'] = account.block_restrictions
            return 200, headers, dump(done)
        if route == 'baserevid' and method == 'POST':
            # {"strict": true|false}: every stale baserevid an editconflict, or
            # Wikibase's patching of non-conflicting changes (the default)
            wiki.strict_baserevid = bool(body['strict'])
            return 200, headers, dump({'strict': wiki.strict_baserevid})
        if route == 'merge' and method == 'POST':
            # {"from": "Q1", "into": "Q2"}: Q1 merged into Q2, now a redirect (redirects.py)
            from .redirects import merge_item
            merge_item(wiki.store, str(body['from']), str(body['into']))
            return 200, headers, dump({'redirect': body['from'], 'to': body['into']})
        if route == 'delete' and method == 'POST':
            wiki.delete_file(body['title'], body.get('reason', 'Copyright violation'))
            return 200, headers, dump({'deleted': body['title']})
        if route == 'edits':
            return 200, headers, dump([e.to_json() for e in wiki.edits])
        if route == 'requests':
            return 200, headers, dump([{**r.__dict__, 'action': r.action}
                                       for r in wiki.requests])
        if route == 'reset' and method == 'POST':
            wiki.recorder.clear()
            wiki.media.reset()
            wiki.faults.clear()
            return 200, headers, dump({'reset': True})
    except (KeyError, TypeError, ValueError) as exc:
        return 400, headers, dump({'error': f'{type(exc).__name__}: {exc}'})
    return 404, headers, dump({'error': f'unknown control route {route!r}'})
