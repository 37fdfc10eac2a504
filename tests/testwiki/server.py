"""The HTTP server: ``/w/api.php``, ``/w/index.php``, media and ``/_control``.

``TestWiki`` is the object tests hold: it owns the store, fault registry,
recorder and media statistics, runs a ``ThreadingHTTPServer`` on 127.0.0.1
in a daemon thread, and offers Python helpers (``add_upload``,
``delete_file``) that the control endpoint mirrors for subprocess tests.
"""
from __future__ import annotations

import json
import threading
import urllib.parse
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from . import control, pageview, userscripts
from .auth import SessionManager
from .dispatch import handle_api
from .faults import FaultRegistry
from .loader import DEFAULT_FIXTURES, load_fixtures
from .media import serve_media
from .oauth import OAuthProvider
from .recording import RecordedEdit, RecordedRequest, Recorder
from .store import WikiStore
from .thumbs import MediaStats

BOT_USER = 'WikivelBot'
BOT_APP = 'test'


@dataclass
class UploadResult:
    """What ``add_upload`` created."""

    title: str
    pageid: int
    logid: int
    timestamp: str
    action: str


class _Handler(BaseHTTPRequestHandler):
    """Routes one HTTP request to the wiki."""

    protocol_version = 'HTTP/1.1'
    server_version = 'mw-web.testwiki'
    wiki: TestWiki  # set on the subclass made per server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet; requests are recorded instead."""

    def _params(self) -> dict[str, str]:
        query = urllib.parse.urlsplit(self.path).query
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else b''
        ctype = self.headers.get('Content-Type', '')
        if body and ctype.startswith('multipart/form-data'):
            message = BytesParser(policy=HTTP).parsebytes(
                b'Content-Type: ' + ctype.encode() + b'\r\n\r\n' + body)
            for part in message.iter_parts():
                name = part.get_param('name', header='content-disposition')
                payload = part.get_payload(decode=True)
                if name and isinstance(payload, bytes):
                    pairs.append((str(name), payload.decode('utf-8', 'replace')))
        elif body:
            pairs += urllib.parse.parse_qsl(body.decode('utf-8'),
                                            keep_blank_values=True)
        return dict(pairs)

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def _route(self) -> None:
        path = urllib.parse.urlsplit(self.path).path
        headers = {k.lower(): v for k, v in self.headers.items()}
        if path.startswith('/_control/'):
            raw = self.rfile.read(int(self.headers.get('Content-Length') or 0))
            self._send(*control.handle(self.wiki, self.command, path, raw))
            return
        if path.startswith(('/images/', '/thumb/')):
            record = RecordedRequest(
                method=self.command, path=path, params={},
                host=headers.get('host', ''),
                user_agent=headers.get('user-agent', ''))
            self.wiki.recorder.add_request(record)
            status, reply_headers, body = serve_media(self.wiki, path)
            record.status = status
            self._send(status, reply_headers, body)
            return
        params = self._params()
        if path.startswith('/w/rest.php/oauth2/'):
            self._send(*self.wiki.oauth.handle(self.command, path, params, headers))
            return
        if path.startswith('/wikidata/w/'):
            path = path[len('/wikidata'):]   # same wiki, second family name
        if path == '/w/api.php':
            self._send(*handle_api(self.wiki, self.command, path, params,
                                   headers))
        elif path == '/w/index.php':
            self._send(*self.wiki.index_php(params))
        elif userscripts.serve(self.wiki, path) is not None:
            self._send(*userscripts.serve(self.wiki, path))  # type: ignore[misc]
        elif path.startswith('/wiki/'):
            title = urllib.parse.unquote(path[len('/wiki/'):])
            self._send(*self.wiki.index_php({**params, 'title': title}))
        else:
            self._send(404, {'Content-Type': 'text/plain'}, b'Not Found')

    do_GET = do_POST = do_HEAD = do_DELETE = _route


class TestWiki:
    """A local MediaWiki/Wikibase look-alike for tests (see README.md)."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, fixtures_dir: str | Path | None = None, *,
                 host: str = '127.0.0.1', port: int = 0,
                 thumb_delay: float = 0.0,
                 thumb_concurrency_limit: int | None = None,
                 strict_baserevid: bool = False) -> None:
        self.store = WikiStore()
        self.faults = FaultRegistry()
        self.recorder = Recorder()
        self.media = MediaStats()
        self.sessions = SessionManager()
        self.oauth = OAuthProvider(self.store)
        self.stopping = threading.Event()
        self.thumb_delay = thumb_delay
        # False: a write against a stale baserevid is patched onto the latest
        # revision unless it conflicts, as Wikibase does (see entitypatch);
        # True: every stale baserevid is an editconflict (conflicts on demand).
        self.strict_baserevid = strict_baserevid
        self.thumb_concurrency_limit = thumb_concurrency_limit
        self.thumb_cache: dict[tuple[str, int], tuple[bytes, str]] = {}
        self.fixtures_dir = Path(fixtures_dir) if fixtures_dir else DEFAULT_FIXTURES
        self.bot_password = load_fixtures(self.store, self.fixtures_dir)
        handler = type('Handler', (_Handler,), {'wiki': self})
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------
    @classmethod
    def start(cls, fixtures_dir: str | Path | None = None, **kwargs: Any
              ) -> TestWiki:
        """Create and start a server (use as a context manager to stop it)."""
        wiki = cls(fixtures_dir, **kwargs)
        wiki.serve_in_thread()
        return wiki

    def serve_in_thread(self) -> None:
        """Serve requests from a daemon thread."""
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        args=(0.05,),
                                        name='testwiki', daemon=True)
        self._thread.start()

    def serve_forever(self) -> None:
        """Serve in the calling thread (standalone mode)."""
        self._httpd.serve_forever(0.1)

    def stop(self) -> None:
        """Stop serving; stalled (timeout-fault) requests are released."""
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        if self._thread is None:
            self.serve_in_thread()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses -----------------------------------------------------
    @property
    def port(self) -> int:
        """The TCP port actually bound."""
        return self._httpd.server_address[1]

    @property
    def server(self) -> str:
        """``http://127.0.0.1:PORT`` (MediaWiki's ``$wgServer``)."""
        return f'http://127.0.0.1:{self.port}'

    base_url = server

    @property
    def api_url(self) -> str:
        """The Action API endpoint."""
        return f'{self.server}/w/api.php'

    @property
    def index_url(self) -> str:
        """``index.php``."""
        return f'{self.server}/w/index.php'

    @property
    def bot_username(self) -> str:
        """Main account name of the bot."""
        return BOT_USER

    @property
    def bot_login(self) -> str:
        """Bot-password login name (``WikivelBot@test``)."""
        return f'{BOT_USER}@{BOT_APP}'

    # -- helpers for tests ---------------------------------------------
    @property
    def edits(self) -> list[RecordedEdit]:
        """Successful edits, oldest first."""
        return list(self.recorder.edits)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, oldest first."""
        return list(self.recorder.requests)

    def write_count(self) -> int:
        """Number of write API requests received (refused ones included)."""
        return self.recorder.write_count()

    def add_upload(self, name: str, data: bytes | None = None, **kwargs: Any
                   ) -> UploadResult:
        """Upload (or overwrite) ``File:name`` now; see :func:`control.upload`."""
        return control.upload(self, name, data, **kwargs)

    def delete_file(self, title: str, reason: str = 'Copyright violation') -> None:
        """Delete a file page at runtime (log entries stay, thumbs 404)."""
        self.store.delete_page(title if title.startswith('File:')
                               else 'File:' + title, reason=reason)

    def entity(self, eid: str) -> dict[str, Any] | None:
        """Current JSON of an entity (MediaInfo: None if it has no data)."""
        page = self.store.entity_page(eid)
        return self.store.entity_data(page) if page else None

    def page_text(self, title: str) -> str | None:
        """Current wikitext of a page, or None if it does not exist."""
        page = self.store.page(title)
        return page.text if page else None

    def index_php(self, params: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """Minimal ``index.php``: ``action=raw``, a page view (a file's with its structured
        data) and ``Special:EntityData`` (see :mod:`.pageview`)."""
        if pageview.is_entity_data(params.get('title', '')):
            return pageview.entity_data(self, params['title'], params)
        page = self.store.page(params.get('title', '')) if params.get('title') \
            else self.store.page_by_id(int(params.get('curid', '0') or 0))
        if page is None:
            return 404, {'Content-Type': 'text/html; charset=utf-8'}, \
                b'<html><body>There is currently no text in this page.</body></html>'
        if params.get('action') == 'raw':
            return 200, {'Content-Type': 'text/x-wiki; charset=UTF-8'}, \
                page.text.encode()
        return pageview.view(self, page, params.get('uselang') or 'en')

    def control_state(self) -> dict[str, Any]:
        """Counters for the control endpoint."""
        return {'api_url': self.api_url, 'media': self.media.to_json(),
                'write_count': self.write_count(),
                'edits': len(self.recorder.edits),
                'strict_baserevid': self.strict_baserevid,
                'faults': [f.to_json() for f in self.faults.pending()]}


def dump(value: Any) -> bytes:
    """JSON bytes for control responses."""
    return json.dumps(value, default=str).encode()
