"""Shared plumbing of the API modules: request context, errors, formats.

Modules build their answers in formatversion=2 shape (real booleans, page
lists, ``content`` keys); :func:`to_formatversion1` turns booleans into the
``""``-present / absent convention of formatversion=1, and the modules that
differ more (``pages`` dict, ``*`` content keys) switch on ``ctx.fv``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .auth import Session
    from .model import User
    from .server import TestWiki

SERVEDBY = 'mw-api-int.testwiki-1'


class ApiError(Exception):
    """An API error answered as ``{"error": {...}}`` with HTTP 200."""

    def __init__(self, code: str, info: str, *, status: int = 200,
                 headers: dict[str, str] | None = None,
                 **extra: Any) -> None:
        super().__init__(f'{code}: {info}')
        self.code = code
        self.info = info
        self.status = status
        self.headers = dict(headers or {})
        self.extra = extra


def wikibase_error(code: str, info: str, message: str,
                   params: list[Any] | None = None) -> ApiError:
    """An error in Wikibase's shape, with the ``messages`` list it adds."""
    return ApiError(code, info, messages=[{
        'name': message, 'parameters': list(params or []),
        'html': {'*': info}}])


@dataclass
class Ctx:
    """Everything an API module needs to answer one request."""

    wiki: TestWiki
    params: dict[str, str]
    method: str
    session: Session
    warnings: dict[str, list[str]] = field(default_factory=dict)
    # prop modules park their continuation here (e.g. rvcontinue)
    pending_continue: dict[str, str] = field(default_factory=dict)
    # the ``editconflict`` fault: this request's stale baserevid is a conflict
    # even on the Wikibase-like wiki (see entitypatch)
    strict_base: bool = False

    @property
    def fv(self) -> int:
        """Requested formatversion (1 unless ``formatversion=2``/``latest``)."""
        value = self.params.get('formatversion', '1')
        return 2 if value in ('2', 'latest') else 1

    @property
    def user(self) -> User | None:
        """Logged-in account of this session, if any."""
        return self.session.user

    def get(self, name: str, default: str | None = None) -> str | None:
        """A single parameter value."""
        return self.params.get(name, default)

    def text(self, name: str, default: str = '') -> str:
        """A single parameter value as a string (*default* when absent)."""
        value = self.params.get(name)
        return default if value is None else value

    def flag(self, name: str) -> bool:
        """Boolean parameter: present means true (MediaWiki semantics)."""
        return name in self.params

    def multi(self, name: str) -> list[str]:
        """A multi-value parameter (``a|b`` or ``\\x1fa\\x1fb``)."""
        value = self.params.get(name)
        if value is None or value == '':
            return []
        if value.startswith('\x1f'):
            return value[1:].split('\x1f')
        return value.split('|')

    def integer(self, name: str, default: int) -> int:
        """Integer parameter with MediaWiki's ``badinteger`` error."""
        value = self.params.get(name)
        if value is None or value == '':
            return default
        try:
            return int(value)
        except ValueError:
            raise ApiError('badinteger',
                           f'Invalid value "{value}" for integer parameter '
                           f'"{name}".') from None

    def limit(self, name: str, default: int, maximum: int = 500,
              high: int = 5000) -> int:
        """A ``*limit`` parameter; ``max`` means the user's maximum."""
        value = self.params.get(name)
        has_high = self.user is not None and 'bot' in self.user.groups
        top = high if has_high else maximum
        if value == 'max':
            return top
        got = self.integer(name, default)
        if got > top:
            self.warn('main', f'"{name}" may not be over {top} (set to '
                      f'{got}) for users.')
            return top
        return max(1, got)

    def warn(self, module: str, text: str) -> None:
        """Queue an API warning for *module*."""
        self.warnings.setdefault(module, []).append(text)

    def require(self, *names: str) -> None:
        """Raise ``missingparam`` unless every parameter is present."""
        for name in names:
            if name not in self.params:
                raise ApiError('missingparam',
                               f'The "{name}" parameter must be set.')


def docref(api_url: str) -> str:
    """The help text MediaWiki appends to every error."""
    return (f'See {api_url} for API usage. Subscribe to the '
            'mediawiki-api-announce mailing list at &lt;https://lists.'
            'wikimedia.org/postorius/lists/mediawiki-api-announce.lists.'
            'wikimedia.org/&gt; for notice of API deprecations and breaking '
            'changes.')


def error_body(err: ApiError, fv: int, api_url: str) -> dict[str, Any]:
    """The JSON body of an API error in the requested formatversion."""
    error: dict[str, Any] = {'code': err.code, 'info': err.info, **err.extra}
    error['docref' if fv == 2 else '*'] = docref(api_url)
    return {'error': error, 'servedby': SERVEDBY}


def add_warnings(body: dict[str, Any], ctx: Ctx) -> None:
    """Attach queued warnings in the formatversion's shape."""
    if not ctx.warnings:
        return
    key = 'warnings' if ctx.fv == 2 else '*'
    body['warnings'] = {mod: {key: '\n'.join(texts)}
                        for mod, texts in ctx.warnings.items()}


def to_formatversion1(value: Any) -> Any:
    """Convert formatversion=2 booleans to formatversion=1 conventions."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if item is True:
                out[key] = ''
            elif item is False:
                continue
            else:
                out[key] = to_formatversion1(item)
        return out
    if isinstance(value, list):
        return [to_formatversion1(v) for v in value]
    return value
