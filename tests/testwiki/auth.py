"""Sessions, tokens, bot-password login, logout and ``meta=userinfo``.

A session is a cookie (``commonswiki_session``) handed out on the first
request, as MediaWiki does once it needs one.  Login tokens and CSRF tokens
are per session; the anonymous CSRF token is ``+\\`` exactly like MediaWiki,
so a client that forgot to log in gets ``badtoken``/``assertuserfailed``.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from .apibase import ApiError, Ctx
from .model import User
from .siteinfo import USER_GROUP_RIGHTS, WIKIID

COOKIE = f'{WIKIID}_session'
ANON_TOKEN = '+\\'


@dataclass
class Session:
    """Server-side session state."""

    id: str
    user: User | None = None
    secret: str = field(default_factory=lambda: secrets.token_hex(16))
    new: bool = False

    def token(self, kind: str) -> str:
        """Token of one type; types differ, as MediaWiki salts each type."""
        digest = hmac.new(self.secret.encode(), kind.encode(), hashlib.sha256)
        return digest.hexdigest()[:32] + '+\\'

    @property
    def csrf(self) -> str:
        """The CSRF (edit) token."""
        return self.token('csrf')

    @property
    def login_token(self) -> str:
        """The login token."""
        return self.token('login')

    def rotate(self) -> None:
        """New tokens, as after login/logout."""
        self.secret = secrets.token_hex(16)


class SessionManager:
    """Cookie → session map."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}

    def get(self, cookie_header: str | None) -> Session:
        """Return the session named by the Cookie header, or a new one."""
        sid = None
        for part in (cookie_header or '').split(';'):
            name, _, value = part.strip().partition('=')
            if name == COOKIE:
                sid = value
        with self._lock:
            if sid and sid in self._sessions:
                return self._sessions[sid]
            session = Session(id=secrets.token_hex(16), new=True)
            self._sessions[session.id] = session
            return session

    def invalidate_tokens(self) -> None:
        """Rotate every session's CSRF token (all cached tokens go stale)."""
        with self._lock:
            for session in self._sessions.values():
                session.rotate()


def rights_of(user: User | None) -> list[str]:
    """Sorted rights of *user* (anonymous: the ``*`` group)."""
    groups = ['*'] + (user.groups if user else [])
    rights: set[str] = set()
    for group in groups:
        rights.update(USER_GROUP_RIGHTS.get(group, []))
    return sorted(rights)


def userinfo(ctx: Ctx) -> dict[str, Any]:
    """``meta=userinfo`` honouring the ``uiprop`` values pywikibot sends."""
    props = set(ctx.multi('uiprop'))
    user = ctx.user
    if user is None:
        info: dict[str, Any] = {'id': 0, 'name': '127.0.0.1', 'anon': True}
    else:
        info = {'id': user.userid, 'name': user.name}
    if 'hasmsg' in props:
        info['messages'] = False
    if 'groups' in props:
        info['groups'] = ['*'] + (['user', 'autoconfirmed'] if user else []) \
            + [g for g in (user.groups if user else [])
               if g not in ('user', 'autoconfirmed', '*')]
    if 'rights' in props:
        info['rights'] = rights_of(user)
    if 'editcount' in props and user:
        info['editcount'] = user.editcount
    if 'registration' in props and user:
        info['registration'] = user.registration
    if 'ratelimits' in props:
        info['ratelimits'] = {} if user and 'bot' in user.groups else {
            'edit': {'user': {'hits': 90, 'seconds': 60}}}
    if 'centralids' in props:
        info['centralids'] = {'CentralAuth': user.userid if user else 0,
                              'local': user.userid if user else 0}
        info['attachedlocal'] = {'CentralAuth': bool(user), 'local': bool(user)}
    if 'options' in props:
        info['options'] = {'language': 'en', 'gender': 'unknown'}
    return info


def tokens(ctx: Ctx) -> dict[str, str]:
    """``meta=tokens``: csrf/login/watch/patrol/rollback/userrights."""
    kinds = ctx.multi('type') or ['csrf']
    out: dict[str, str] = {}
    for kind in kinds:
        if kind in ('login', 'createaccount'):
            out[f'{kind}token'] = ctx.session.token(kind)
        elif kind in ('csrf', 'watch', 'patrol', 'rollback', 'userrights',
                      'deleteglobalaccount', 'setglobalaccountstatus'):
            out[f'{kind}token'] = ctx.session.token(kind) if ctx.user \
                else ANON_TOKEN
        else:
            raise ApiError('badvalue', f'Unrecognized value for parameter '
                           f'"type": {kind}.')
    return out


def login(ctx: Ctx) -> dict[str, Any]:
    """``action=login`` with a bot password (``User@app`` + password)."""
    if ctx.method != 'POST':
        raise ApiError('mustbeposted',
                       'The "login" module requires a POST request.')
    name = ctx.text('lgname') or ''
    password = ctx.text('lgpassword') or ''
    token = ctx.get('lgtoken')
    if not token:
        return {'login': {'result': 'NeedToken', 'token': ctx.session.login_token}}
    if token != ctx.session.login_token:
        return {'login': {'result': 'WrongToken'}}
    base, _, app = name.partition('@')
    account = ctx.wiki.store.user(base)
    if account is None or not app or account.botpasswords.get(app) != password:
        if account is not None and not app:
            # MediaWiki refuses main-account passwords through action=login.
            ctx.warn('main', 'Main-account login via "action=login" is '
                     'deprecated and may stop working without warning.')
        return {'login': {'result': 'Failed', 'reason':
                          'Incorrect username or password entered.\n'
                          'Please try again.'}}
    ctx.session.user = account
    ctx.session.rotate()
    return {'login': {'result': 'Success', 'lguserid': account.userid,
                      'lgusername': account.name}}


def logout(ctx: Ctx) -> dict[str, Any]:
    """``action=logout`` (needs the CSRF token, like MediaWiki ≥ 1.34)."""
    check_token(ctx)
    ctx.session.user = None
    ctx.session.rotate()
    return {}


def check_token(ctx: Ctx) -> None:
    """Raise ``badtoken``/``notoken`` unless the CSRF token is valid."""
    token = ctx.get('token')
    if token is None:
        raise ApiError('missingparam', 'The "token" parameter must be set.')
    if token != (ctx.session.csrf if ctx.user else ANON_TOKEN):
        raise ApiError('badtoken', 'Invalid CSRF token.')


def check_assert(ctx: Ctx) -> None:
    """Honour ``assert=user|bot|anon`` and ``assertuser``."""
    wanted = ctx.get('assert')
    user = ctx.user
    if wanted == 'user' and user is None:
        raise ApiError('assertuserfailed', 'You are no longer logged in, so '
                       'the action could not be completed.')
    if wanted == 'bot' and (user is None or 'bot' not in user.groups):
        raise ApiError('assertbotfailed', 'You do not have the "bot" right, '
                       'so the action could not be completed.')
    if wanted == 'anon' and user is not None:
        raise ApiError('assertanonfailed', 'You are no longer logged out, so '
                       'the action could not be completed.')
    named = ctx.get('assertuser')
    if named and (user is None or user.name != named):
        raise ApiError('assertnameduserfailed', f'You are no longer logged in '
                       f'as "{named}", so the action could not be completed.')
