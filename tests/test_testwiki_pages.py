"""The test wiki's pages for people: a file page that shows the file's structured data,
``Special:EntityData/M….json`` as Commons serves it, and the web review's settings that
``python -m tests.testwiki --web-config`` writes (so ``wikivel-bot web`` logs in there).

All over real HTTP; the statement is written by real pywikibot, the login is the real OAuth
exchange of the web app against the standalone wiki.
"""
from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

if 'pywikibot' not in sys.modules:
    # pywikibot picks its directory at import: keep caches out of the checkout.
    os.environ.setdefault('PYWIKIBOT_DIR', tempfile.mkdtemp(prefix='pwb-testwiki-'))
    os.environ.setdefault('PYWIKIBOT_NO_USER_CONFIG', '2')

from tests.testwiki import TestWiki
from tests.testwiki.oauth import DEFAULT_CLIENT_ID, DEFAULT_CLIENT_SECRET
from tests.testwiki.pwb import configure, unconfigure
from tests.testwiki.websettings import MARKER

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope='module')
def wiki() -> Iterator[TestWiki]:
    with TestWiki.start() as server:
        yield server


def label(wiki: TestWiki, eid: str) -> str:
    entity = wiki.entity(eid)
    assert entity is not None, eid
    return str(entity['labels']['en']['value'])


def statements_on_page(text: str) -> list[tuple[str, str]]:
    """(value id, rank) of every statement the page's structured-data section lists."""
    section = re.search(r'<section id="structured-data".*?</section>', text, re.S)
    assert section, 'the file page has no structured-data section'
    return re.findall(r'<li class="wbmi-statement" data-value="([^"]*)" data-rank="([^"]*)"',
                      section.group(0))


def test_file_page_shows_depicts_with_labels_and_ranks(wiki: TestWiki) -> None:
    page = requests.get(f'{wiki.server}/wiki/File:Red_car_on_street.jpg', timeout=10)
    assert page.status_code == 200 and page.headers['Content-Type'].startswith('text/html')
    assert statements_on_page(page.text) == [('Q1420', 'preferred'), ('Q79007', 'normal')]
    for qid in ('Q1420', 'Q79007'):
        assert f'>{html.escape(label(wiki, qid))}</a> <span class="wbmi-entity-id">({qid})</span>' in page.text
    assert '>depicts <small>(P180)</small></h3>' in page.text
    assert '(prominent)' in page.text
    # index.php with title= is the same page; a file without structured data says so.
    same = requests.get(wiki.index_url, params={'title': 'File:Red car on street.jpg'}, timeout=10)
    assert statements_on_page(same.text) == statements_on_page(page.text)
    bare = requests.get(f'{wiki.server}/wiki/File:Lighthouse_at_dusk.jpg', timeout=10)
    assert 'This file has no structured data yet.' in bare.text
    assert '<li class="wbmi-statement"' not in bare.text
    raw = requests.get(f'{wiki.server}/wiki/File:Red_car_on_street.jpg', params={'action': 'raw'}, timeout=10)
    assert raw.headers['Content-Type'].startswith('text/x-wiki') and raw.text == wiki.page_text('File:Red car on street.jpg')


def test_file_page_escapes_what_the_wiki_holds(wiki: TestWiki) -> None:
    # Titles cannot hold < or >, but & and quotes they can.
    wiki.add_upload('Salt & "pepper".jpg', wikitext='<script>alert(1)</script> [[Category:X]]',
                    mediainfo={'labels': {'en': {'language': 'en', 'value': '<img src=x onerror=alert(2)>'}},
                               'statements': {}})
    page = requests.get(f'{wiki.server}/wiki/File:Salt_%26_%22pepper%22.jpg', timeout=10).text
    assert '<script>' not in page and '<img src=x' not in page and '& "pepper"' not in page
    assert '&lt;img src=x onerror=alert(2)&gt;' in page and '&lt;script&gt;' in page
    assert '<h1 id="firstHeading">File:Salt &amp; &quot;pepper&quot;.jpg</h1>' in page


def test_entity_data_answers_like_commons(wiki: TestWiki) -> None:
    expected = requests.get(wiki.api_url, params={'action': 'wbgetentities', 'ids': 'M10011',
                                                  'format': 'json', 'formatversion': 2}, timeout=10).json()
    for url in (f'{wiki.server}/wiki/Special:EntityData/M10011.json',
                f'{wiki.server}/w/index.php?title=Special:EntityData/M10011.json',
                f'{wiki.server}/wiki/Special:EntityData/m10011.json',
                f'{wiki.server}/wiki/Special:EntityData?id=M10011&format=json'):
        answer = requests.get(url, timeout=10)
        assert answer.status_code == 200, url
        assert answer.headers['Content-Type'].startswith('application/json')
        body = answer.json()
        assert list(body) == ['entities'] and list(body['entities']) == ['M10011'], url
        assert body['entities']['M10011'] == expected['entities']['M10011'], url
    entity = body['entities']['M10011']
    assert entity['type'] == 'mediainfo' and entity['title'] == 'File:Red car on street.jpg'
    assert [s['mainsnak']['datavalue']['value']['id'] for s in entity['statements']['P180']] == ['Q1420', 'Q79007']
    item = requests.get(f'{wiki.server}/wiki/Special:EntityData/Q146.json', timeout=10).json()
    assert item['entities']['Q146']['labels']['en']['value'] == label(wiki, 'Q146')
    assert 'claims' in item['entities']['Q146'] and 'statements' not in item['entities']['Q146']
    for path, status in (('M10010.json', 404),      # a file without structured data
                         ('M99999999.json', 404),   # no such page
                         ('Mxyz.json', 400), ('M10011.ttl', 415)):
        answer = requests.get(f'{wiki.server}/wiki/Special:EntityData/{path}', timeout=10)
        assert answer.status_code == status, (path, answer.text)


@pytest.fixture(scope='module')
def site(wiki: TestWiki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield configure(wiki, tmp_path_factory.mktemp('pywikibot'))
    unconfigure()   # later test modules get pywikibot's own families back


def test_a_statement_written_with_pywikibot_shows_on_the_page_and_in_entity_data(
        wiki: TestWiki, site: Any) -> None:
    import pywikibot

    site.login()
    mediainfo = pywikibot.FilePage(site, 'File:Lighthouse at dusk.jpg').data_item()
    mediainfo.get()
    claim = pywikibot.Claim(site, 'P180')
    claim.setTarget(pywikibot.ItemPage(site, 'Q39715'))
    mediainfo.addClaim(claim, summary='Approved by Reviewer, batch 1')
    page = requests.get(f'{wiki.server}/wiki/File:Lighthouse_at_dusk.jpg', timeout=10).text
    assert statements_on_page(page) == [('Q39715', 'normal')]
    assert f'>{label(wiki, "Q39715")}</a>' in page
    data = requests.get(f'{wiki.server}/wiki/Special:EntityData/M10010.json', timeout=10).json()
    entity = data['entities']['M10010']
    assert [s['mainsnak']['datavalue']['value']['id'] for s in entity['statements']['P180']] == ['Q39715']
    assert entity['lastrevid'] == wiki.edits[-1].new_revid


def test_the_starter_label_sets_items_can_be_added(tmp_path: Path) -> None:
    from tests.testwiki.starter_items import add_starter_items, read_rows

    rows = read_rows()
    with TestWiki.start() as fresh:
        lacking = [r[0] for r in rows if fresh.entity(r[0]) is None]
        assert lacking, 'the fixtures already hold the whole starter set: nothing to test'
        assert add_starter_items(fresh) == len(lacking)
        assert add_starter_items(fresh) == 0, 'added twice'
        for qid, label_text, description, p31, p279 in rows:
            entity = fresh.entity(qid)
            assert entity is not None, qid
            if qid in lacking:
                assert entity['labels']['en']['value'] == label_text
                for statement in entity['claims'].get('P279', []) + entity['claims'].get('P31', []):
                    target = statement['mainsnak']['datavalue']['value']['id']
                    assert target in p31 + p279 and fresh.entity(target) is not None, (qid, target)
        answer = requests.get(fresh.api_url, params={'action': 'wbgetentities', 'ids': lacking[0],
                                                     'format': 'json'}, timeout=10).json()
        assert 'missing' not in answer['entities'][lacking[0]]


def start_standalone(*args: str, cwd: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, '-m', 'tests.testwiki', '--port', '0', *args], cwd=cwd,
                            env={**os.environ, 'PYTHONPATH': str(ROOT)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()   # type: ignore[union-attr]
    return proc, line


def test_web_config_lets_the_web_review_log_in_on_the_wiki(tmp_path: Path) -> None:
    from wikivel_bot.config import load_settings
    from wikivel_bot.queue import migrate
    from wikivel_bot.queue.engine import create_engine_for
    from wikivel_bot.queue.store import Store
    from wikivel_bot.web.app import create_app
    from wikivel_bot.web.secrets_file import load_secrets
    from tests.web_support import consent

    proc, api_url = start_standalone('--web-config', 'wikivel.toml', cwd=tmp_path)
    try:
        assert api_url.startswith('http://127.0.0.1:') and api_url.endswith('/w/api.php'), api_url
        # The standalone wiki knows the starter label set's items (Q668 is not in the fixtures).
        india = requests.get(api_url, params={'action': 'wbgetentities', 'ids': 'Q668', 'format': 'json'},
                             timeout=10).json()['entities']['Q668']
        assert india['labels']['en']['value'] == 'India'
        server = api_url.rsplit('/w/api.php', 1)[0]
        settings_file, secret_file = tmp_path / 'wikivel.toml', tmp_path / 'wikivel.secrets.toml'
        assert settings_file.read_text().startswith(MARKER)
        assert DEFAULT_CLIENT_SECRET not in settings_file.read_text(), 'the secret is in the settings file'
        assert oct(secret_file.stat().st_mode & 0o777) == '0o600'
        settings = load_settings(settings_file, env={'WIKIVEL_SITE_API_URL': api_url})
        assert settings.web.oauth_client_id == DEFAULT_CLIENT_ID
        assert settings.web.oauth_url == server + '/w/rest.php'
        secrets = load_secrets(settings.web.secrets_file)
        assert secrets.oauth_client_secret == DEFAULT_CLIENT_SECRET and not secrets.ephemeral
        store = Store(create_engine_for(f"sqlite:///{tmp_path / 'queue.sqlite'}"))
        migrate.upgrade(store.engine)
        app = create_app(settings, store, secrets=secrets, items=False)
        client = app.test_client()
        local = 'http://127.0.0.1:8080'  # the consumer takes callbacks under http://127.0.0.1
        start = client.get('/login?next=/', base_url=local)
        assert start.status_code == 302, start.get_data(as_text=True)  # not "503 login is not set up"
        assert start.headers['Location'].startswith(server + '/w/rest.php/oauth2/authorize?')
        callback = urlsplit(consent(start.headers['Location'], 'Alice Uploader'))
        assert callback.netloc == '127.0.0.1:8080', callback
        done = client.get(callback.path + '?' + callback.query, base_url=local)
        assert done.status_code == 302, done.get_data(as_text=True)
        assert 'Alice Uploader' in client.get('/', base_url=local).get_data(as_text=True)
        store.close()
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert 'wikivel.toml' in err and 'mode 600' in err
    assert DEFAULT_CLIENT_SECRET not in out + err, 'a secret was printed'
    assert secrets.session_secret not in out + err


def test_web_config_never_overwrites_the_operators_own_settings(tmp_path: Path) -> None:
    own = tmp_path / 'wikivel.toml'
    own.write_text('[db]\nurl = "sqlite:///mine.sqlite"\n')
    proc = subprocess.run([sys.executable, '-m', 'tests.testwiki', '--port', '0', '--web-config', str(own)],
                          cwd=tmp_path, env={**os.environ, 'PYTHONPATH': str(ROOT)}, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ''
    assert proc.stderr.startswith('error: ') and proc.stderr.count('\n') == 1, proc.stderr
    assert 'not overwriting' in proc.stderr and 'Traceback' not in proc.stderr
    assert own.read_text() == '[db]\nurl = "sqlite:///mine.sqlite"\n'
    assert not (tmp_path / 'wikivel.secrets.toml').exists()
