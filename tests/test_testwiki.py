"""The local test wiki, exercised over real HTTP (requests) and real pywikibot."""
from __future__ import annotations

import io
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from PIL import Image

if 'pywikibot' not in sys.modules:
    # pywikibot picks its directory at import: keep caches, cookies and the
    # throttle file out of the checkout.
    os.environ.setdefault('PYWIKIBOT_DIR', tempfile.mkdtemp(prefix='pwb-testwiki-'))
    os.environ.setdefault('PYWIKIBOT_NO_USER_CONFIG', '2')

from tests.testwiki import THUMB_STEPS, TestWiki
from tests.testwiki.pwb import configure, unconfigure

ROOT = Path(__file__).resolve().parents[1]
LOCAL = ('127.0.0.1', '::1', 'localhost')


@pytest.fixture(scope='module')
def wiki() -> Iterator[TestWiki]:
    with TestWiki.start() as server:
        yield server


@pytest.fixture(scope='module')
def only_localhost() -> Iterator[list[Any]]:
    """Record every outgoing connection/DNS lookup; fail on non-local ones.

    Installed before pywikibot builds its site (module scope) so the pooled
    connections pywikibot reuses are recorded too.
    """
    seen: list[Any] = []
    real_connect, real_gai = socket.socket.connect, socket.getaddrinfo

    def connect(sock: socket.socket, address: Any) -> Any:
        seen.append(address)
        if isinstance(address, tuple) and address[0] not in LOCAL:
            raise AssertionError(f'connection to non-local host {address!r}')
        return real_connect(sock, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(host)
        if host not in LOCAL:
            raise AssertionError(f'DNS lookup of non-local host {host!r}')
        return real_gai(host, *args, **kwargs)

    patch = pytest.MonkeyPatch()
    patch.setattr(socket.socket, 'connect', connect)
    patch.setattr(socket, 'getaddrinfo', getaddrinfo)
    yield seen
    patch.undo()


@pytest.fixture(scope='module')
def site(wiki: TestWiki, only_localhost: list[Any],
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    yield configure(wiki, tmp_path_factory.mktemp('pywikibot'))
    unconfigure()   # later test modules get pywikibot's own families back


def api(wiki: TestWiki, session: requests.Session | None = None,
        **params: Any) -> Any:
    params.setdefault('format', 'json')
    response = (session or requests).post(wiki.api_url, data=params, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


# -- reads over plain HTTP ----------------------------------------------------
def test_siteinfo_has_what_pywikibot_needs(wiki: TestWiki) -> None:
    data = api(wiki, action='query', meta='siteinfo', formatversion=2,
               siprop='general|namespaces|namespacealiases|extensions')
    query = data['query']
    assert query['general']['generator'].startswith('MediaWiki 1.43')
    assert query['general']['server'] == wiki.server
    assert query['namespaces']['6']['name'] == 'File'
    assert query['namespaces']['14']['canonical'] == 'Category'
    assert {'id': 6, 'alias': 'Image'} in query['namespacealiases']
    names = {ext['name'] for ext in query['extensions']}
    assert {'WikibaseMediaInfo', 'WikibaseClient'} <= names


def test_logevents_continuation_keeps_equal_timestamps(wiki: TestWiki) -> None:
    base: dict[str, Any] = {
        'action': 'query', 'list': 'logevents', 'letype': 'upload',
        'leprop': 'ids|title|timestamp|user|details', 'ledir': 'newer',
        'lestart': '2024-05-01T11:00:00Z', 'leend': '2024-05-01T12:30:00Z'}
    everything = api(wiki, lelimit='max', **base)['query']['logevents']
    stamps = [e['timestamp'] for e in everything]
    assert stamps.count('2024-05-01T12:00:00Z') == 5       # one batch upload
    seen: list[dict[str, Any]] = []
    cont: dict[str, str] = {}
    rounds = 0
    while True:
        data = api(wiki, None, lelimit=2, **base, **cont)
        seen += data['query']['logevents']
        rounds += 1
        if 'continue' not in data:
            break
        cont = data['continue']
        assert cont['lecontinue'].count('|') == 1
    assert rounds > 3
    assert [e['logid'] for e in seen] == [e['logid'] for e in everything]
    keys = [(e['timestamp'], e['logid']) for e in seen]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


def test_logevents_older_and_overwrite_action(wiki: TestWiki) -> None:
    older = api(wiki, action='query', list='logevents', letype='upload',
                lelimit=5)['query']['logevents']
    assert [e['timestamp'] for e in older] == sorted(
        (e['timestamp'] for e in older), reverse=True)
    over = api(wiki, action='query', list='logevents',
               leaction='upload/overwrite')['query']['logevents']
    assert [e['title'] for e in over] == ['File:Overwritten photo.jpg']
    assert over[0]['action'] == 'overwrite'
    bad = api(wiki, action='query', list='logevents', leaction='upload/nope')
    assert bad['error']['code'] == 'badvalue'


def test_imageinfo_thumbnails_follow_wikimedia_rules(wiki: TestWiki) -> None:
    def info(title: str, width: int) -> dict[str, Any]:
        data = api(wiki, action='query', titles=title, prop='imageinfo',
                   iiprop='url|size|mime|sha1', iiurlwidth=width, formatversion=2)
        return data['query']['pages'][0]['imageinfo'][0]

    big = info('File:Red_bridge_over_river.jpg', 330)
    assert (big['width'], big['thumbwidth']) == (1280, 330)
    thumb = requests.get(big['thumburl'], timeout=10)
    assert thumb.status_code == 200
    assert Image.open(io.BytesIO(thumb.content)).size == (
        big['thumbwidth'], big['thumbheight'])
    odd = info('File:Red_bridge_over_river.jpg', 333)['thumburl']
    refused = requests.get(odd, timeout=10)
    assert (refused.status_code, refused.text) == (429, 'Use thumbnail steps')
    small = info('File:Small red circle.png', 330)
    assert small['thumburl'] == small['url'] and small['thumbwidth'] == 48
    svg = info('File:Wikivel logo.svg', 500)
    rendered = requests.get(svg['thumburl'], timeout=10)
    assert svg['thumburl'].endswith('500px-Wikivel_logo.svg.png')
    assert rendered.headers['Content-Type'] == 'image/png'
    assert Image.open(io.BytesIO(rendered.content)).size == (500, 500)
    bomb = info('File:Decompression bomb.png', 250)
    assert bomb['width'] == 50000
    assert requests.get(bomb['thumburl'], timeout=10).status_code == 500


def test_media_concurrency_is_tracked(wiki: TestWiki) -> None:
    url = api(wiki, action='query', titles='File:Dog in the park.jpg',
              prop='imageinfo', iiprop='url', iiurlwidth=120, formatversion=2
              )['query']['pages'][0]['imageinfo'][0]['thumburl']
    wiki.media.reset()
    wiki.thumb_delay = 0.3
    try:
        threads = [threading.Thread(target=requests.get, args=(url,),
                                    kwargs={'timeout': 10}) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        wiki.thumb_delay = 0.0
    assert wiki.media.max_concurrent == 3 and wiki.media.total == 3
    assert set(THUMB_STEPS) >= {120, 330, 1280}


def test_categories_hidden_filter_and_revisions_slots(wiki: TestWiki) -> None:
    def cats(show: str) -> list[str]:
        data = api(wiki, action='query', titles='File:Black cat on sofa.jpg',
                   prop='categories', clshow=show, formatversion=2)
        return [c['title'] for c in data['query']['pages'][0]['categories']]

    assert cats('!hidden') == ['Category:Black cats', 'Category:Cats on sofas']
    assert 'Category:CC-BY-SA-4.0' in cats('hidden')
    fv1 = api(wiki, action='query', titles='File:Black cat on sofa.jpg',
              prop='revisions', rvprop='content|ids', rvslots='main|mediainfo')
    page = fv1['query']['pages']['10001']
    slot = page['revisions'][0]['slots']['mediainfo']
    assert slot['contentmodel'] == 'wikibase-mediainfo'
    assert '"P180"' in slot['*'] and '{{Information' in \
        page['revisions'][0]['slots']['main']['*']
    missing = api(wiki, action='query', titles='File:Nope.jpg|File:Black_cat_on_sofa.jpg',
                  prop='info', inprop='protection')['query']
    assert 'missing' in missing['pages']['-1']
    assert missing['normalized'] == [{'from': 'File:Black_cat_on_sofa.jpg',
                                      'to': 'File:Black cat on sofa.jpg'}]
    prot = api(wiki, action='query', titles='File:Protected logo.png',
               prop='info', inprop='protection', formatversion=2)
    assert {'type': 'edit', 'level': 'sysop', 'expiry': 'infinity'} in \
        prot['query']['pages'][0]['protection']


def test_wbgetentities_for_mediainfo_and_items(wiki: TestWiki) -> None:
    data = api(wiki, action='wbgetentities', ids='M10001|Q146|M10004|P180')
    entities = data['entities']
    p180 = entities['M10001']['statements']['P180'][0]
    assert p180['mainsnak']['datavalue'] == {
        'value': {'entity-type': 'item', 'numeric-id': 146, 'id': 'Q146'},
        'type': 'wikibase-entityid'}
    assert p180['id'].startswith('M10001$') and p180['rank'] == 'normal'
    assert entities['M10004'] == {'id': 'M10004', 'missing': ''}   # no SDC
    cat = entities['Q146']
    assert cat['labels']['en']['value'] == 'house cat'
    assert cat['labels']['de']['value'] == 'Hauskatze'
    assert {c['mainsnak']['datavalue']['value']['id']
            for c in cat['claims']['P279']} >= {'Q39201'}
    assert cat['sitelinks']['enwiki']['title'] == 'house cat'
    assert entities['P180']['datatype'] == 'wikibase-item'
    by_title = api(wiki, action='wbgetentities', sites='commonswiki',
                   titles='File:Dog in the park.jpg')['entities']
    assert list(by_title) == ['M10002']
    pluto = api(wiki, action='wbgetentities', ids='Q339')['entities']['Q339']
    assert 'deprecated' in {c['rank'] for c in pluto['claims']['P31']}


def test_login_and_write_errors_have_real_shapes(wiki: TestWiki,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    s = requests.Session()
    token = api(wiki, s, action='query', meta='tokens', type='login'
                )['query']['tokens']['logintoken']
    wrong = api(wiki, s, action='login', lgname=wiki.bot_login,
                lgpassword='wrong', lgtoken=token)['login']
    assert wrong == {'result': 'Failed', 'reason': 'Incorrect username or '
                     'password entered.\nPlease try again.'}
    ok = api(wiki, s, action='login', lgname=wiki.bot_login,
             lgpassword=wiki.bot_password, lgtoken=token)['login']
    assert ok['result'] == 'Success' and ok['lgusername'] == 'WikivelBot'
    claim = ('{"mainsnak":{"snaktype":"value","property":"P180","datavalue":'
             '{"value":{"entity-type":"item","numeric-id":5},"type":'
             '"wikibase-entityid"}},"type":"statement","rank":"normal",'
             '"id":"M10006$0b9a0f3c-1111-4222-8333-944455556666"}')
    bad = api(wiki, s, action='wbsetclaim', claim=claim, token='nope+\\')
    assert bad['error']['code'] == 'badtoken'
    csrf = api(wiki, s, action='query', meta='tokens')['query']['tokens']['csrftoken']
    # strict: any stale baserevid is a conflict (Wikibase would say nosuchrevid here)
    monkeypatch.setattr(wiki, 'strict_baserevid', True)
    stale = api(wiki, s, action='wbsetclaim', claim=claim, token=csrf,
                baserevid=1)
    monkeypatch.undo()
    assert stale['error']['code'] == 'editconflict'
    assert stale['error']['messages'][0]['name'] == 'edit-conflict'
    before = wiki.write_count()
    good = api(wiki, s, action='wbsetclaim', claim=claim, token=csrf)
    assert good['success'] == 1 and good['claim']['mainsnak']['datavalue'][
        'value']['id'] == 'Q5'
    assert wiki.write_count() == before + 1
    assert wiki.edits[-1].entity == 'M10006' and wiki.edits[-1].baserevid is None


def test_faults_via_control_endpoint_and_runtime_uploads(wiki: TestWiki) -> None:
    control = wiki.server + '/_control'
    requests.post(control + '/faults', json={'kind': 'logevents',
                                             'error': 'http503'}, timeout=5)
    failed = requests.post(wiki.api_url, data={
        'action': 'query', 'list': 'logevents', 'format': 'json'}, timeout=5)
    assert failed.status_code == 503
    requests.post(control + '/faults', json={
        'kind': 'query', 'error': 'maxlag', 'lag': 8}, timeout=5)
    lagged = requests.post(wiki.api_url, data={
        'action': 'query', 'meta': 'userinfo', 'maxlag': 5, 'format': 'json'},
        timeout=5)
    assert lagged.json()['error']['code'] == 'maxlag'
    assert lagged.json()['error']['lag'] == 8
    assert lagged.headers['Retry-After'] == '8'
    last = max(e.logid for e in wiki.store.log)
    added = requests.post(control + '/uploads', json={
        'name': 'Runtime upload.jpg', 'width': 320, 'height': 200},
        timeout=5).json()
    assert added['logid'] == last + 1
    newest = api(wiki, action='query', list='logevents', letype='upload',
                 lelimit=1)['query']['logevents'][0]
    assert (newest['title'], newest['logid']) == ('File:Runtime upload.jpg',
                                                  added['logid'])
    requests.post(control + '/delete', json={'title': 'File:Runtime upload.jpg'},
                  timeout=5)
    gone = api(wiki, action='query', titles='File:Runtime upload.jpg',
               prop='imageinfo', formatversion=2)['query']['pages'][0]
    assert gone['missing'] is True
    kept = api(wiki, action='query', list='logevents', letype='upload',
               letitle='File:Runtime upload.jpg')['query']['logevents']
    assert kept[0]['pageid'] == 0 and kept[0]['logpage'] == added['pageid']
    state = requests.get(control + '/state', timeout=5).json()
    assert state['faults'] == []


def test_timeout_fault_stalls_the_request(wiki: TestWiki) -> None:
    # Stalled until released (600 s only guards a hang): the client gives up first whatever
    # the machine's load.
    stalled = wiki.faults.add('wbgetentities', 'timeout', seconds=600)
    with pytest.raises(requests.exceptions.ReadTimeout):
        requests.post(wiki.api_url, data={'action': 'wbgetentities',
                                          'ids': 'Q5', 'format': 'json'},
                      timeout=0.5)
    assert stalled.holding.is_set()
    stalled.release()
    assert api(wiki, action='wbgetentities', ids='Q5')['success'] == 1


def test_a_held_answer_is_sent_when_the_test_releases_it(wiki: TestWiki) -> None:
    """``hold_response`` applies the request, then holds the answer until released through
    the control endpoint: the order of events is the test's, not the clock's."""
    control = wiki.server + '/_control'
    added = requests.post(control + '/faults', json={
        'kind': 'wbgetentities', 'error': 'hold_response', 'seconds': 600}, timeout=120).json()
    (fault,) = wiki.faults.pending()
    answers: list = []
    client = threading.Thread(target=lambda: answers.append(api(
        wiki, action='wbgetentities', ids='Q5')))
    client.start()
    assert fault.holding.wait(120)  # the request arrived and its answer is held
    assert answers == [] and client.is_alive()
    released = requests.post(control + '/faults/release', json={'id': added['id']},
                             timeout=120).json()
    assert released['id'] == added['id'] and released['holding'] is True
    client.join(120)
    assert not client.is_alive() and answers[0]['success'] == 1
    assert requests.post(control + '/faults/release', json={'id': 999},
                         timeout=120).status_code == 400


def test_file_deleted_between_poll_and_fetch(wiki: TestWiki) -> None:
    title = 'File:Lighthouse at dusk.jpg'
    polled = api(wiki, action='query', list='logevents', letype='upload',
                 letitle=title)['query']['logevents']
    assert polled and polled[0]['pageid'] > 0
    wiki.faults.add('imageinfo', 'delete_file', title=title)
    fetched = api(wiki, action='query', titles=title, prop='imageinfo',
                  iiprop='url', formatversion=2)['query']['pages'][0]
    assert fetched['missing'] is True and fetched['imagerepository'] == ''
    mid = f"M{polled[0]['pageid']}"
    assert api(wiki, action='wbgetentities', ids=mid)['entities'][mid] == {
        'id': mid, 'missing': ''}
    deletions = api(wiki, action='query', list='logevents', letype='delete',
                    letitle=title)['query']['logevents']
    assert deletions[0]['action'] == 'delete'


def test_redirects_and_wbeditentity_for_mediainfo(wiki: TestWiki) -> None:
    data = api(wiki, action='query', titles='File:Black cat.jpg', redirects=1,
               prop='info', formatversion=2)['query']
    assert data['redirects'] == [{'from': 'File:Black cat.jpg',
                                  'to': 'File:Black cat on sofa.jpg'}]
    assert data['pages'][0]['pageid'] == 10001
    s = requests.Session()
    token = api(wiki, s, action='query', meta='tokens', type='login'
                )['query']['tokens']['logintoken']
    api(wiki, s, action='login', lgname=wiki.bot_login,
        lgpassword=wiki.bot_password, lgtoken=token)
    csrf = api(wiki, s, action='query', meta='tokens')['query']['tokens']['csrftoken']
    claim = {'mainsnak': {'snaktype': 'value', 'property': 'P180', 'datavalue': {
        'value': {'entity-type': 'item', 'numeric-id': 39715},
        'type': 'wikibase-entityid'}}, 'type': 'statement', 'rank': 'normal'}
    refused = api(wiki, s, action='wbeditentity', id='M10011', token=csrf,
                  data=f'{{"statements": [{json.dumps(claim)}]}}')
    assert refused['error']['code'] == 'not-supported'
    done = api(wiki, s, action='wbeditentity', id='M10011', token=csrf,
               summary='add lighthouse', data=f'{{"claims": [{json.dumps(claim)}]}}')
    assert done['success'] == 1
    saved = done['entity']['statements']['P180']
    assert [st['mainsnak']['datavalue']['value']['id'] for st in saved][-1] == 'Q39715'
    assert wiki.edits[-1].action == 'wbeditentity'
    assert wiki.edits[-1].new_revid == done['entity']['lastrevid']


# -- real pywikibot ----------------------------------------------------------
def test_pywikibot_site_builds_offline(wiki: TestWiki, site: Any,
                                       only_localhost: list[Any]) -> None:
    import pywikibot
    from pywikibot.family import AutoFamily

    assert type(site).__name__ == 'DataSite'
    assert site.data_repository() == site
    assert site.namespaces.FILE.custom_name == 'File'
    assert site.has_extension('WikibaseMediaInfo')
    auto = pywikibot.Site('autotest', AutoFamily('autotest', wiki.api_url))
    assert auto.siteinfo['generator'] == 'MediaWiki 1.43.0'
    assert auto.namespaces[14].custom_name == 'Category'
    page = pywikibot.FilePage(site, 'File:Nobots example.jpg')
    assert page.exists() and not page.botMayEdit()
    assert pywikibot.FilePage(site, 'File:Black cat on sofa.jpg').botMayEdit()
    item = pywikibot.ItemPage(site, 'Q146')
    item.get()
    assert item.claims['P18'][0].getTarget().title() == 'File:Black cat on sofa.jpg'
    assert only_localhost and all(
        (a[0] if isinstance(a, tuple) else a) in LOCAL for a in only_localhost)


def test_pywikibot_login_and_add_claim(wiki: TestWiki, site: Any,
                                       only_localhost: list[Any]) -> None:
    import pywikibot

    site.login()
    assert site.user() == 'WikivelBot'
    file_page = pywikibot.FilePage(site, 'File:Mallard on pond.jpg')
    mediainfo = file_page.data_item()
    mediainfo.get()
    base = mediainfo.latest_revision_id
    claim = pywikibot.Claim(site, 'P180')
    claim.setTarget(pywikibot.ItemPage(site, 'Q3736439'))
    claim.setRank('preferred')
    mediainfo.addClaim(claim, summary='Approved by Reviewer, batch 7',
                       tags=['wikivel-bot'])
    edit = wiki.edits[-1]
    assert (edit.entity, edit.action, edit.baserevid) == (mediainfo.id,
                                                          'wbsetclaim', base)
    assert edit.bot and edit.tags == ['wikivel-bot'] and edit.new_revid > base
    assert edit.claim is not None and edit.claim['rank'] == 'preferred'
    assert edit.summary == 'Approved by Reviewer, batch 7'
    entity = wiki.entity(mediainfo.id)
    assert entity is not None
    stored = entity['statements']['P180']
    assert [s['mainsnak']['datavalue']['value']['id'] for s in stored] == [
        'Q25348', 'Q3736439']
    assert mediainfo.latest_revision_id == edit.new_revid
    fresh = pywikibot.FilePage(site, 'File:Mallard on pond.jpg').data_item()
    assert len(fresh.get()['statements']['P180']) == 2
    assert all((a[0] if isinstance(a, tuple) else a) in LOCAL
               for a in only_localhost)


def test_pywikibot_edit_conflict_and_maxlag(wiki: TestWiki, site: Any) -> None:
    import pywikibot
    from pywikibot.exceptions import APIError

    site.login()
    mediainfo = pywikibot.FilePage(site, 'File:Owl on branch.jpg').data_item()
    mediainfo.get()
    edits_before = len(wiki.edits)
    wiki.faults.add('wbsetclaim', 'editconflict')
    claim = pywikibot.Claim(site, 'P180')
    claim.setTarget(pywikibot.ItemPage(site, 'Q5113'))
    with pytest.raises(APIError) as err:
        mediainfo.addClaim(claim)
    assert err.value.code == 'editconflict'
    assert len(wiki.edits) == edits_before
    mediainfo = pywikibot.FilePage(site, 'File:Owl on branch.jpg').data_item()
    mediainfo.get(force=True)
    fault = wiki.faults.add('wbsetclaim', 'maxlag', lag=6, retry_after=1)
    claim = pywikibot.Claim(site, 'P180')
    claim.setTarget(pywikibot.ItemPage(site, 'Q5113'))
    mediainfo.addClaim(claim)
    assert fault.fired == 1
    tail = [r.error for r in wiki.recorder.api_requests('wbsetclaim')[-2:]]
    assert tail == ['maxlag', None]
    assert wiki.edits[-1].entity == mediainfo.id


def test_pywikibot_recovers_from_badtoken_and_http500(wiki: TestWiki,
                                                      site: Any) -> None:
    import pywikibot

    site.login()
    wiki.faults.add('wbgetentities', 'http500')
    item = pywikibot.ItemPage(site, 'Q12280')
    assert item.get()['labels']['en'] == 'bridge'
    mediainfo = pywikibot.FilePage(site, 'File:Sailing boat at sea.jpg').data_item()
    mediainfo.get()
    wiki.faults.add('wbsetclaim', 'badtoken')
    claim = pywikibot.Claim(site, 'P180')
    claim.setTarget(pywikibot.ItemPage(site, 'Q35872'))
    mediainfo.addClaim(claim)
    errors = [r.error for r in wiki.recorder.api_requests('wbsetclaim')[-2:]]
    assert errors == ['badtoken', None]
    assert wiki.edits[-1].entity == mediainfo.id
    statuses = [r.status for r in wiki.recorder.api_requests('wbgetentities')
                if r.params.get('ids') == 'Q12280']
    assert statuses[:2] == [500, 200]


# -- standalone ---------------------------------------------------------------
def test_standalone_server_prints_url_and_stops_on_sigterm() -> None:
    proc = subprocess.Popen([sys.executable, '-m', 'tests.testwiki', '--port',
                             '0'], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()   # type: ignore[union-attr]
        assert line.startswith('http://127.0.0.1:') and line.endswith('/w/api.php')
        reply = requests.get(line, params={'action': 'query', 'meta': 'siteinfo',
                                           'format': 'json'}, timeout=10)
        assert reply.json()['query']['general']['sitename']
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
