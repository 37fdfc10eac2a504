"""A reviewer's user scripts on the test wiki's page views, and a stand-in for the small part
of MediaWiki's ``mw`` they use.

On Commons, a user's ``common.js`` runs on every page with ``mw`` ready. The test wiki does
the same for the scripts in ``wiki.user_scripts`` (URLs, empty by default): a page view
carries the page's ``mw.config`` values as JSON, loads ``/w/mw-standin.js`` and then
``/w/user-common.js``, which is ``mw.loader.load(url)`` for each script, as one's common.js
on the wiki would be.

The stand-in is **not** MediaWiki: it offers only ``mw.config.get(name)`` (``wgNamespaceNumber``,
``wgArticleId``, ``wgPageName``, ``wgTitle``, ``wgAction``, ``wgUserLanguage``, ``wgServer``)
and ``mw.loader.load(url)`` (a ``<script>`` element appended to the head, as ResourceLoader
does for a URL). A script that needs more of ``mw`` fails here first.
"""
from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Page
    from .server import TestWiki

STANDIN_PATH = '/w/mw-standin.js'
COMMON_PATH = '/w/user-common.js'
STANDIN_JS = """/* A stand-in for the part of MediaWiki's mw a user script uses (tests/testwiki/userscripts.py). */
(function () {
  'use strict';
  var values = JSON.parse(document.getElementById('mw-config').textContent);
  window.mw = {
    config: { get: function (name) {
      return Object.prototype.hasOwnProperty.call(values, name) ? values[name] : null;
    } },
    loader: { load: function (url) {
      var s = document.createElement('script');
      s.src = url;
      document.head.appendChild(s);
    } }
  };
}());
"""

Reply = tuple[int, dict[str, str], bytes]


def scripts_of(wiki: TestWiki) -> list[str]:
    return list(getattr(wiki, 'user_scripts', None) or [])


def head_html(wiki: TestWiki, page: Page, lang: str = 'en') -> str:
    """What a page view carries for the user scripts ("" when there are none)."""
    if not scripts_of(wiki):
        return ''
    values: dict[str, Any] = {
        'wgNamespaceNumber': page.ns, 'wgArticleId': page.pageid, 'wgPageName': page.title.replace(' ', '_'),
        'wgTitle': page.title.split(':', 1)[1] if page.ns else page.title, 'wgAction': 'view',
        'wgUserLanguage': lang, 'wgServer': wiki.api_url.split('/w/', 1)[0],
    }
    config = html.escape(json.dumps(values), quote=False)
    return (f'<script type="application/json" id="mw-config">{config}</script>'
            f'<script src="{STANDIN_PATH}"></script><script src="{COMMON_PATH}"></script>')


def serve(wiki: TestWiki, path: str) -> Reply | None:
    """The stand-in and the user's common.js; None for any other path."""
    js = {'Content-Type': 'text/javascript; charset=utf-8'}
    if path == STANDIN_PATH:
        return 200, js, STANDIN_JS.encode()
    if path == COMMON_PATH:
        lines = [f'mw.loader.load({json.dumps(url)});' for url in scripts_of(wiki)]
        return 200, js, ('\n'.join(lines) + '\n').encode()
    return None
