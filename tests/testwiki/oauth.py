"""MediaWiki's OAuth 2.0 provider (Extension:OAuth) under ``/w/rest.php/oauth2/``.

The three endpoints a web tool uses, with the shapes and errors of the real extension:

* ``GET /w/rest.php/oauth2/authorize?response_type=code&client_id=…&redirect_uri=…&state=…``
  shows a consent page. Where the real wiki would ask the user to log in first, this page
  has a *user name* field, so a test (or a browser driven by one) logs in as whichever
  fixture user it chooses by submitting the form; "Allow" redirects to the consumer's
  callback with ``code`` and ``state``, "Cancel" with ``error=access_denied``.
* ``POST /w/rest.php/oauth2/access_token`` (``grant_type=authorization_code``; the client
  authenticates with HTTP Basic or ``client_id``/``client_secret`` in the body) answers
  ``{"token_type": "Bearer", "expires_in": …, "access_token": …, "refresh_token": …}``.
  A code works once, for the consumer and callback it was issued to. PKCE (RFC 7636): an
  authorize request with ``code_challenge`` (``S256`` or ``plain``) binds the code to it,
  and the exchange must then send the matching ``code_verifier`` (else ``invalid_grant``).
* ``GET /w/rest.php/oauth2/resource/profile`` with ``Authorization: Bearer …`` answers the
  profile: ``sub``, ``username``, ``editcount``, ``confirmed_email``, ``blocked``,
  ``registered``, ``groups`` (with the implicit ``*`` and ``user``), ``rights``, ``grants``.

Consumers are registered with :meth:`OAuthProvider.register`; the callback is a prefix, as
with the extension's "allow the consumer to specify a callback" option, because a test's
web app listens on a port chosen at run time.
"""
from __future__ import annotations

import base64
import hashlib
import html
import json
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from .siteinfo import USER_GROUP_RIGHTS
from .store import WikiStore

PREFIX = '/w/rest.php/oauth2/'
# The consumer every test wiki knows (tests may register more).
DEFAULT_CLIENT_ID = 'wikivel-web-test'
DEFAULT_CLIENT_SECRET = 'wikivel-web-test-secret-7d21'
DEFAULT_CALLBACK_PREFIX = 'http://127.0.0.1'
TOKEN_LIFETIME_S = 14400
CODE_LIFETIME_S = 600

Response = tuple[int, dict[str, str], bytes]


@dataclass
class Consumer:
    """A registered OAuth 2.0 consumer (confidential client)."""

    client_id: str
    secret: str
    callback_prefix: str
    grants: list[str] = field(default_factory=lambda: ['basic'])


@dataclass
class _Grant:
    client_id: str
    redirect_uri: str
    user: str
    expires: float
    used: bool = False
    challenge: str = ''           # PKCE code_challenge sent to authorize ('' = none)
    challenge_method: str = ''


class OAuthProvider:
    """Authorization codes and access tokens for the fixture users."""

    def __init__(self, store: WikiStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self.consumers: dict[str, Consumer] = {}
        self._codes: dict[str, _Grant] = {}
        self._tokens: dict[str, tuple[str, str, float]] = {}  # token -> (client, user, expiry)
        # Every authorize/token/profile request, for tests: (endpoint, status).
        self.log: list[tuple[str, int]] = []
        self.register(DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET, DEFAULT_CALLBACK_PREFIX)

    def register(self, client_id: str, secret: str, callback_prefix: str) -> Consumer:
        """Register (or replace) a consumer."""
        consumer = Consumer(client_id, secret, callback_prefix)
        with self._lock:
            self.consumers[client_id] = consumer
        return consumer

    def revoke_all(self) -> None:
        """Forget every access token (as when a user revokes the grant)."""
        with self._lock:
            self._tokens.clear()

    # -- routing ---------------------------------------------------------
    def handle(self, method: str, path: str, params: dict[str, str],
               headers: dict[str, str]) -> Response:
        """Answer one request under ``/w/rest.php/oauth2/``."""
        endpoint = path[len(PREFIX):]
        if endpoint == 'authorize' and method in ('GET', 'HEAD'):
            answer = self._consent_page(params)
        elif endpoint == 'authorize' and method == 'POST':
            answer = self._consent(params)
        elif endpoint == 'access_token' and method == 'POST':
            answer = self._token(params, headers)
        elif endpoint == 'resource/profile' and method in ('GET', 'HEAD'):
            answer = self._profile(headers)
        else:
            answer = _json(404, {'httpCode': 404, 'httpReason': 'Not Found',
                                 'message': f'No handler for {method} {path}'})
        self.log.append((endpoint, answer[0]))
        return answer

    # -- authorize -------------------------------------------------------
    def _check_request(self, params: dict[str, str]) -> tuple[Consumer, str] | Response:
        consumer = self.consumers.get(params.get('client_id', ''))
        if consumer is None:
            return _page(400, 'Error', 'The client_id is not a registered OAuth consumer.')
        if params.get('response_type') != 'code':
            return _page(400, 'Error', 'response_type must be "code".')
        redirect = params.get('redirect_uri') or consumer.callback_prefix
        if not redirect.startswith(consumer.callback_prefix):
            return _page(400, 'Error', 'The redirect_uri does not match the registered callback.')
        if params.get('code_challenge') and params.get('code_challenge_method', 'plain') not in ('S256', 'plain'):
            return _page(400, 'Error', 'Code challenge method must be one of plain, S256.')
        return consumer, redirect

    def _consent_page(self, params: dict[str, str]) -> Response:
        checked = self._check_request(params)
        if not isinstance(checked, tuple) or not isinstance(checked[0], Consumer):
            return checked  # type: ignore[return-value]
        consumer, _ = checked
        hidden = ''.join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
            for k, v in params.items() if k in ('client_id', 'redirect_uri', 'state',
                                                 'response_type', 'scope', 'code_challenge',
                                                 'code_challenge_method'))
        body = (
            f'<p>The application <b>{html.escape(consumer.client_id)}</b> wants to '
            'identify you (grant: basic).</p>'
            f'<form method="post" action="{PREFIX}authorize">{hidden}'
            '<label for="wpName">Log in as (user name)</label> '
            '<input id="wpName" name="username" autofocus> '
            '<button type="submit" name="decision" value="allow" id="mw-oauth-allow">Allow</button> '
            '<button type="submit" name="decision" value="cancel" id="mw-oauth-cancel">Cancel</button>'
            '</form>')
        return _page(200, 'Authorize application', body)

    def _consent(self, params: dict[str, str]) -> Response:
        checked = self._check_request(params)
        if not isinstance(checked, tuple) or not isinstance(checked[0], Consumer):
            return checked  # type: ignore[return-value]
        consumer, redirect = checked
        state = params.get('state', '')
        if params.get('decision') != 'allow':
            return _redirect(redirect, {'error': 'access_denied', 'state': state})
        user = self.store.user(params.get('username', '').strip())
        if user is None:
            return _page(200, 'Login error', 'There is no user by that name.')
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._codes[code] = _Grant(consumer.client_id, params.get('redirect_uri', ''),
                                       user.name, time.time() + CODE_LIFETIME_S,
                                       challenge=params.get('code_challenge', ''),
                                       challenge_method=params.get('code_challenge_method', 'plain'))
        return _redirect(redirect, {'code': code, 'state': state})

    # -- token -----------------------------------------------------------
    def _token(self, params: dict[str, str], headers: dict[str, str]) -> Response:
        client_id, secret = params.get('client_id', ''), params.get('client_secret', '')
        auth = headers.get('authorization', '')
        if auth.lower().startswith('basic '):
            raw = base64.b64decode(auth[6:]).decode()
            client_id, _, secret = raw.partition(':')
            client_id, secret = urllib.parse.unquote(client_id), urllib.parse.unquote(secret)
        consumer = self.consumers.get(client_id)
        if consumer is None or not secrets.compare_digest(consumer.secret, secret):
            return _json(401, {'error': 'invalid_client', 'error_description': 'Client authentication failed',
                               'message': 'Client authentication failed'})
        if params.get('grant_type') != 'authorization_code':
            return _json(400, {'error': 'unsupported_grant_type',
                               'message': 'The authorization grant type is not supported.'})
        with self._lock:
            grant = self._codes.get(params.get('code', ''))
            bad = (grant is None or grant.used or grant.expires < time.time()
                   or grant.client_id != consumer.client_id
                   or (grant.redirect_uri and params.get('redirect_uri', '') != grant.redirect_uri)
                   or not _pkce_ok(grant, params.get('code_verifier', '')))
            if bad or grant is None:
                return _json(400, {'error': 'invalid_grant', 'error_description':
                                   'The provided authorization grant is invalid, expired or revoked',
                                   'message': 'Authorization code is invalid'})
            grant.used = True
            token = secrets.token_urlsafe(32)
            self._tokens[token] = (consumer.client_id, grant.user, time.time() + TOKEN_LIFETIME_S)
        return _json(200, {'token_type': 'Bearer', 'expires_in': TOKEN_LIFETIME_S,
                           'access_token': token, 'refresh_token': secrets.token_urlsafe(32)})

    # -- profile ---------------------------------------------------------
    def _profile(self, headers: dict[str, str]) -> Response:
        auth = headers.get('authorization', '')
        token = auth[7:] if auth.lower().startswith('bearer ') else ''
        with self._lock:
            found = self._tokens.get(token)
        if found is None or found[2] < time.time():
            return _json(401, {'error': 'invalid_token', 'message': 'The access token is invalid'})
        user = self.store.user(found[1])
        if user is None:
            return _json(401, {'error': 'invalid_token', 'message': 'The user no longer exists'})
        groups = ['*', 'user'] + [g for g in user.groups if g not in ('*', 'user')]
        rights = sorted({r for g in groups for r in _rights(g)})
        return _json(200, {
            'sub': str(user.userid), 'username': user.name, 'editcount': user.editcount,
            'confirmed_email': True, 'blocked': bool(user.blocked),
            'registered': user.registration.replace('-', '').replace(':', '').replace('T', '').rstrip('Z'),
            'groups': groups, 'rights': rights, 'grants': ['basic'],
        })


def _pkce_ok(grant: _Grant, verifier: str) -> bool:
    """A code issued without a challenge needs no verifier; one with needs the right one."""
    if not grant.challenge:
        return True
    if grant.challenge_method == 'S256':
        digest = hashlib.sha256(verifier.encode()).digest()
        verifier = base64.urlsafe_b64encode(digest).rstrip(b'=').decode()
    return bool(verifier) and secrets.compare_digest(verifier, grant.challenge)


def _rights(group: str) -> list[str]:
    return list(USER_GROUP_RIGHTS.get(group, ()))


def _json(status: int, payload: Any) -> Response:
    return status, {'Content-Type': 'application/json', 'Cache-Control': 'no-store'}, \
        json.dumps(payload).encode()


def _page(status: int, title: str, body: str) -> Response:
    doc = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}'
           f' - Wikivel Test Commons</title></head><body><h1>{html.escape(title)}</h1>{body}</body></html>')
    return status, {'Content-Type': 'text/html; charset=utf-8'}, doc.encode()


def _redirect(target: str, query: dict[str, str]) -> Response:
    sep = '&' if '?' in target else '?'
    location = target + sep + urllib.parse.urlencode(query)
    return 302, {'Location': location, 'Content-Type': 'text/html; charset=utf-8'}, b''
