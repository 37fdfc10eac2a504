"""Regenerate ``tests/testwiki/fixtures/`` (run: ``python -m tests.testwiki.make_fixtures``).

Writes site.json, items.jsonl and, per file, the bytes, wikitext, metadata
and (optionally) MediaInfo JSON.  Output is deterministic; the generated
files are committed so tests never depend on this script running.
"""
from __future__ import annotations

import datetime as dt
import json
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import fixture_draw as fd
from . import fixture_evidence
from .claims import _snak_hash
from .fixture_files import FILES, LICENSES, USERS
from .fixture_items import ITEMS, PEOPLE, PROPERTIES
from .fixture_items2 import ART, GEO, META, STRUCTURES, THINGS
from .model import first_upper

OUT = Path(__file__).resolve().parent / 'fixtures'
BASE = dt.datetime(2024, 5, 1, 8, 0, 0, tzinfo=dt.UTC)
BOT_PASSWORD = 'wikivel-test-bot-password-4f9c'
# Extra statements that make the item graph interesting for readers.
CREATORS = {'Q12418': 'Q762', 'Q45585': 'Q5582', 'Q219831': 'Q5598',
            'Q185372': 'Q41264', 'Q151047': 'Q5669', 'Q471379': 'Q41406',
            'Q128910': 'Q762'}
COUNTRIES = {'Q90': 'Q142', 'Q64': 'Q183', 'Q84': 'Q145', 'Q60': 'Q30',
             'Q220': 'Q38', 'Q1490': 'Q17', 'Q1741': 'Q40', 'Q727': 'Q55',
             'Q1726': 'Q183', 'Q243': 'Q142', 'Q9202': 'Q30', 'Q10285': 'Q38',
             'Q82425': 'Q183', 'Q2981': 'Q142', 'Q41225': 'Q145',
             'Q44440': 'Q30', 'Q83125': 'Q145', 'Q45178': 'Q30',
             'Q48435': 'Q29', 'Q19675': 'Q142', 'Q160112': 'Q29',
             'Q190804': 'Q55', 'Q180788': 'Q145', 'Q160236': 'Q30'}
ALIASES = {'Q146': ['cat', 'domestic cat', 'Felis catus'],
           'Q144': ['domestic dog', 'Canis familiaris'],
           'Q1420': ['car', 'automobile', 'auto'], 'Q5': ['person', 'people'],
           'Q12418': ['La Gioconda', 'La Joconde'], 'Q243': ['Tour Eiffel']}


def ts(minutes: int) -> str:
    """Fixture timestamp *minutes* after the base time."""
    return (BASE + dt.timedelta(minutes=minutes)).strftime('%Y-%m-%dT%H:%M:%SZ')


def entity_value(qid: str) -> dict[str, Any]:
    """Wikibase entity-id datavalue of *qid*."""
    return {'value': {'entity-type': 'item', 'numeric-id': int(qid[1:]),
                      'id': qid}, 'type': 'wikibase-entityid'}


def statement(owner: str, pid: str, value: dict[str, Any] | None, *,
              rank: str = 'normal', datatype: str | None = 'wikibase-item',
              snaktype: str = 'value') -> dict[str, Any]:
    """A statement in Wikibase JSON with a deterministic GUID and hash."""
    snak: dict[str, Any] = {'snaktype': snaktype, 'property': pid}
    if value is not None and snaktype == 'value':
        snak['datavalue'] = value
    if datatype:
        snak['datatype'] = datatype
    snak['hash'] = _snak_hash(snak)
    ordered = {k: snak[k] for k in ('snaktype', 'property', 'hash', 'datavalue',
                                    'datatype') if k in snak}
    guid = uuid.uuid5(uuid.NAMESPACE_URL, f'{owner}/{pid}/{json.dumps(value)}')
    sep_guid = str(guid).upper() if owner.startswith('M') else str(guid)
    return {'mainsnak': ordered, 'type': 'statement', 'id': f'{owner}${sep_guid}',
            'rank': rank}


def _labels(en: str, de: str, fr: str) -> dict[str, Any]:
    out = {'en': {'language': 'en', 'value': en}}
    if de:
        out['de'] = {'language': 'de', 'value': de}
    if fr:
        out['fr'] = {'language': 'fr', 'value': fr}
    return out


def item_json(row: tuple[Any, ...]) -> dict[str, Any]:
    """Full item entity JSON from a table row."""
    qid, en, desc, de, fr, p31, p279, p18 = row
    claims: dict[str, list[dict[str, Any]]] = {}
    if p31:
        claims['P31'] = [statement(qid, 'P31', entity_value(t)) for t in p31]
    if p279:
        claims['P279'] = [statement(qid, 'P279', entity_value(t)) for t in p279]
    if p18:
        claims['P18'] = [statement(qid, 'P18', {'value': p18.replace('_', ' '),
                                                'type': 'string'},
                                   datatype='commonsMedia')]
    if qid in CREATORS:
        claims['P170'] = [statement(qid, 'P170', entity_value(CREATORS[qid]))]
    if qid in COUNTRIES:
        claims['P17'] = [statement(qid, 'P17', entity_value(COUNTRIES[qid]))]
    if qid == 'Q131397':   # creator unknown: a somevalue snak
        claims['P170'] = [statement(qid, 'P170', None, snaktype='somevalue')]
    if qid == 'Q339':      # Pluto: "planet" kept but deprecated since 2006
        claims['P31'].insert(0, statement(qid, 'P31', entity_value('Q634'),
                                          rank='deprecated'))
    sitelinks = {'enwiki': {'site': 'enwiki', 'title': en, 'badges': []}}
    if de:
        sitelinks['dewiki'] = {'site': 'dewiki', 'title': de, 'badges': []}
    sitelinks['commonswiki'] = {'site': 'commonswiki',
                                'title': f'Category:{first_upper(en)}',
                                'badges': []}
    _evidence_overrides(qid, claims, sitelinks)
    return {'type': 'item', 'id': qid, 'labels': _labels(en, de, fr),
            'descriptions': {'en': {'language': 'en', 'value': desc}},
            'aliases': {'en': [{'language': 'en', 'value': a}
                               for a in ALIASES.get(qid, [])]}
            if qid in ALIASES else {},
            'claims': claims, 'sitelinks': sitelinks}


def _evidence_overrides(qid: str, claims: dict[str, list[dict[str, Any]]],
                        sitelinks: dict[str, Any]) -> None:
    """Statements and the Commons sitelink of fixture_evidence.OVERRIDES."""
    override = fixture_evidence.OVERRIDES.get(qid)
    if override is None:
        return
    types = {pid: dtype for pid, dtype, _, _ in PROPERTIES + fixture_evidence.PROPERTIES}
    for pid, values in override.get('claims', {}).items():
        for value in values:
            data = entity_value(value) if types[pid] == 'wikibase-item' \
                else {'value': value, 'type': 'string'}
            claims.setdefault(pid, []).append(statement(qid, pid, data, datatype=types[pid]))
    if 'commons' in override:
        sitelinks.pop('commonswiki')
        if override['commons']:
            sitelinks['commonswiki'] = {'site': 'commonswiki', 'title': override['commons'],
                                        'badges': []}


def all_entities() -> list[dict[str, Any]]:
    """Properties first, then every item row (people get P31 human)."""
    out: list[dict[str, Any]] = []
    for pid, dtype, label, desc in PROPERTIES + fixture_evidence.PROPERTIES:
        out.append({'type': 'property', 'datatype': dtype, 'id': pid,
                    'labels': {'en': {'language': 'en', 'value': label}},
                    'descriptions': {'en': {'language': 'en', 'value': desc}},
                    'aliases': {}, 'claims': {}})
    rows = list(ITEMS) + [(q, en, d, de, fr, ['Q5'], [], None)
                          for q, en, d, de, fr in PEOPLE]
    rows += GEO + STRUCTURES + ART + THINGS + META + fixture_evidence.ITEMS
    seen = set()
    for row in rows:
        assert row[0] not in seen, row[0]
        seen.add(row[0])
        out.append(item_json(row))
    known = seen
    for entity in out:
        claims: dict[str, list[dict[str, Any]]] = entity['claims']
        for group in claims.values():
            for st in group:
                value = st['mainsnak'].get('datavalue', {}).get('value')
                if isinstance(value, dict):
                    assert value['id'] in known, (entity['id'], value['id'])
    return out


@dataclass
class Built:
    """Running counters while writing files."""

    pageid: int = 10001
    logid: int = 50001
    extra: list[str] = field(default_factory=list)


def mediainfo(pageid: int, spec: dict[str, Any]) -> dict[str, Any] | None:
    """MediaInfo entity (storage form: no datatype in snaks) or None."""
    if not spec.get('depicts') and not spec.get('sdc_extra'):
        return None
    mid = f'M{pageid}'
    statements: dict[str, list[dict[str, Any]]] = {}
    for target, rank in spec.get('depicts', []):
        value = entity_value(target) if target != 'somevalue' else None
        statements.setdefault('P180', []).append(statement(
            mid, 'P180', value, rank=rank, datatype=None,
            snaktype='somevalue' if value is None else 'value'))
    if spec.get('sdc_extra'):
        statements['P275'] = [statement(mid, 'P275', entity_value(
            LICENSES[spec.get('license', 'self')][2]), datatype=None)]
        statements['P7482'] = [statement(mid, 'P7482', entity_value('Q66458942'),
                                         datatype=None)]
    labels = {'en': {'language': 'en', 'value': spec['caption']}} \
        if spec.get('caption') else {}
    return {'type': 'mediainfo', 'id': mid, 'labels': labels,
            'descriptions': {}, 'statements': statements}


def write_file(files: Path, spec: dict[str, Any], built: Built) -> None:
    """Write bytes, wikitext, metadata and MediaInfo of one fixture file."""
    name, kind = spec['name'], spec.get('kind', 'scene')
    w, h = spec.get('size', (640, 480))
    render = None
    mime = {'jpg': 'image/jpeg', 'png': 'image/png', 'gif': 'image/gif',
            'webp': 'image/webp', 'tif': 'image/tiff', 'svg': 'image/svg+xml',
            'pdf': 'application/pdf', 'webm': 'video/webm'}[name.rsplit('.', 1)[1]]
    fmt = {'image/jpeg': 'JPEG', 'image/png': 'PNG', 'image/webp': 'WEBP',
           'image/tiff': 'TIFF'}.get(mime)
    extra_meta: dict[str, Any] = {}
    if kind == 'gif':
        data = fd.animated_gif(w, h)
    elif kind == 'truncated':
        data = fd.truncated_jpeg(w, h)
    elif kind == 'bomb':
        data, (w, h) = fd.png_bomb(), (50000, 50000)
    elif kind == 'svg':
        data, render = fd.SVG_LOGO.encode(), fd.svg_render(200)
    elif kind == 'pdf':
        data, render, (w, h) = fd.tiny_pdf(), fd.pdf_render(), (620, 877)
        extra_meta['pagecount'] = 3
    elif kind == 'video':
        data, render, (w, h) = fd.webm_stub(), fd.video_render(), (640, 360)
        extra_meta['duration'] = 4.2
    else:
        data = fd.encode(fd.picture(spec.get('scene', ''), w, h,
                                    seed=built.pageid), fmt or 'PNG')
    pageid, logid = built.pageid, built.logid
    built.pageid += 1
    built.logid += 1
    (files / name).write_bytes(data)
    if render is not None:
        (files / f'{name}.render.png').write_bytes(render)
    lic_template, hidden, _ = LICENSES[spec.get('license', 'self')]
    hidden = list(hidden) + list(spec.get('hidden', []))
    (files / f'{name}.wiki').write_text(wikitext(spec, lic_template), 'utf-8')
    meta: dict[str, Any] = {
        'pageid': pageid, 'logid': logid, 'timestamp': ts(spec['minute']),
        'uploader': spec.get('user', 'Alice Uploader'),
        'comment': spec.get('comment', 'Uploaded own work with UploadWizard'),
        'mime': mime, 'width': w, 'height': h, 'hidden_categories': hidden,
        'protection': spec.get('protection', []),
        'tags': ['uploadwizard'] if spec.get('user') != 'Carla Archiv' else [],
        'flags': spec.get('flags', []), **extra_meta}
    mi = mediainfo(pageid, spec)
    if mi is not None:
        (files / f'{name}.mediainfo.json').write_text(
            json.dumps(mi, ensure_ascii=False, indent=1) + '\n', 'utf-8')
        meta['sdc'] = {'timestamp': ts(spec['minute'] + 3), 'user': 'SDC Helper',
                       'comment': '/* wbeditentity-update:0| */ Structured '
                       'data: depicts'}
    if spec.get('deleted'):
        meta['deleted'] = {'timestamp': ts(spec['minute'] + 30), 'user': 'Admin',
                           'logid': 59002,
                           'reason': 'Copyright violation: found elsewhere on '
                           'the web and unlikely to be own work'}
    if spec.get('overwrite'):
        meta['overwrites'] = [{'timestamp': ts(spec['minute'] + 45),
                               'logid': 59001, 'user': spec.get('user', 'Alice Uploader'),
                               'comment': 'Cropped and colour-corrected'}]
    (files / f'{name}.json').write_text(json.dumps(meta, indent=1) + '\n', 'utf-8')


def wikitext(spec: dict[str, Any], license_template: str) -> str:
    """Commons-style description page."""
    desc = ' '.join(f'{{{{{lang}|1={text}}}}}' for lang, text in spec['desc'].items())
    user = spec.get('user', 'Alice Uploader')
    lines = []
    lines += [spec['prefix']] if spec.get('prefix') else []
    lines += ['=={{int:filedesc}}==', '{{Information', f'|description={desc}',
              f'|date={ts(spec["minute"] - 60 * 24 * 3)[:10]}',
              '|source={{own}}', f'|author=[[User:{user}|{user}]]',
              '|permission=', '|other versions=', '}}']
    if spec.get('location'):
        lat, lon = spec['location']
        lines.append(f'{{{{Location|{lat}|{lon}}}}}')
    lines += [spec['extra']] if spec.get('extra') else []
    lines += ['', '=={{int:license-header}}==', license_template, '']
    lines += [f'[[Category:{c}]]' for c in spec.get('cats', [])]
    return '\n'.join(lines) + '\n'


def site_json() -> dict[str, Any]:
    """Users, bot password, tags, hidden categories and helper pages."""
    users = [dict(u) for u in USERS]
    for user in users:
        if user['name'] == 'WikivelBot':
            user['botpasswords'] = {'test': BOT_PASSWORD}
    hidden = sorted({c for _, cats, _ in LICENSES.values() for c in cats}
                    | {'Media with locations', 'Uploaded with UploadWizard',
                       'Hidden categories'})
    pages = [
        {'title': 'Main Page', 'text': 'Welcome to the Wikivel test wiki.'},
        {'title': 'User:WikivelBot', 'text': '{{Bot|Wikivel operator}}\n'
         'Proposes depicts (P180) statements; every edit is human-approved.'},
        {'title': 'User:WikivelBot/Stop', 'text': 'run'},
        {'title': 'Template:Nobots', 'text': '<noinclude>Bots stay away.'
         '</noinclude>'},
        {'title': 'Template:Bots', 'text': '<noinclude>Bot exclusion.'
         '</noinclude>'},
        {'title': 'Template:Information', 'text': '<includeonly>{{{description|}}}'
         '</includeonly>'},
        {'title': 'Template:Self', 'text': '<includeonly>licence</includeonly>'},
        {'title': 'Template:Hiddencat', 'text': 'This category is hidden.'},
        {'title': 'File:Black cat.jpg',
         'text': '#REDIRECT [[File:Black cat on sofa.jpg]]'},
    ]
    return {'base_timestamp': '2024-01-01T00:00:00Z', 'first_revid': 900000,
            'users': users, 'hidden_categories': hidden,
            'change_tags': ['uploadwizard', 'wikivel-bot',
                            'computer-aided-tagging', 'mobile edit'],
            'pages': pages}


def main() -> None:
    """Rewrite the fixture directory."""
    if OUT.exists():
        shutil.rmtree(OUT)
    files = OUT / 'files'
    files.mkdir(parents=True)
    (OUT / 'site.json').write_text(json.dumps(site_json(), indent=1,
                                              ensure_ascii=False) + '\n', 'utf-8')
    with (OUT / 'items.jsonl').open('w', encoding='utf-8') as out:
        for entity in all_entities():
            out.write(json.dumps(entity, ensure_ascii=False,
                                 separators=(',', ':')) + '\n')
    built = Built()
    for spec in FILES:
        write_file(files, spec, built)
    total = sum(p.stat().st_size for p in OUT.rglob('*') if p.is_file())
    print(f'wrote {len(FILES)} files, {len(all_entities())} entities, '
          f'{total / 1e6:.2f} MB to {OUT}')


if __name__ == '__main__':
    main()
