"""``action=paraminfo`` for the modules this wiki implements.

pywikibot reads module prefixes, ``limit`` parameters (``max``/``highmax``),
multi-value limits and the submodule lists of ``main`` and ``query`` from
here before it runs any query generator, so the answers must be shaped like
MediaWiki's (formatversion=1 by default: ``"multi": ""``).
"""
from __future__ import annotations

from typing import Any

Spec = tuple[str, Any, dict[str, Any]]


def _p(name: str, ptype: Any = 'string', **kw: Any) -> Spec:
    return name, ptype, kw


def _limit(default: int = 10, maximum: int = 500, high: int = 5000) -> Spec:
    return _p('limit', 'limit', default=default, max=maximum, highmax=high,
              min=1)


_NS = _p('namespace', 'namespace', multi=True)
_DIR = _p('dir', ['ascending', 'descending'], default='ascending')
_TS_DIR = _p('dir', ['newer', 'older'], default='older')
_CONT = _p('continue')

# module path → (prefix, group, params)
QUERY_MODULES: dict[str, tuple[str, str, list[Spec]]] = {
    'logevents': ('le', 'list', [
        _p('prop', ['ids', 'title', 'type', 'user', 'userid', 'timestamp',
                    'comment', 'parsedcomment', 'details', 'tags'], multi=True,
           default='ids|title|type|user|timestamp|comment|details'),
        _p('type', ['', 'block', 'create', 'delete', 'import', 'merge',
                    'move', 'newusers', 'patrol', 'protect', 'rights', 'tag',
                    'upload', 'thanks']),
        _p('action'), _p('start', 'timestamp'), _p('end', 'timestamp'),
        _TS_DIR, _p('user', 'user'), _p('title', 'title'), _NS,
        _p('prefix'), _p('tag'), _limit(), _CONT]),
    'allimages': ('ai', 'list', [
        _p('sort', ['name', 'timestamp'], default='name'),
        _p('dir', ['ascending', 'descending', 'newer', 'older'],
           default='ascending'),
        _p('from'), _p('to'), _CONT, _p('start', 'timestamp'),
        _p('end', 'timestamp'),
        _p('prop', ['timestamp', 'user', 'userid', 'comment', 'url', 'size',
                    'dimensions', 'sha1', 'mime', 'mediatype', 'metadata'],
           multi=True, default='timestamp|url'),
        _p('prefix'), _p('minsize', 'integer'), _p('maxsize', 'integer'),
        _p('sha1'), _p('sha1base36'), _p('user', 'user'),
        _p('mime', multi=True), _limit()]),
    'allpages': ('ap', 'list', [_p('from'), _CONT, _p('to'), _p('prefix'),
                                _p('namespace', 'namespace', default=0),
                                _p('filterredir', ['all', 'nonredirects',
                                                   'redirects']),
                                _limit(), _DIR]),
    'allusers': ('au', 'list', [_p('from'), _p('to'), _p('prefix'), _DIR,
                                _p('group', multi=True),
                                _p('prop', ['groups', 'editcount',
                                            'registration', 'rights'],
                                   multi=True), _limit()]),
    'categorymembers': ('cm', 'list', [
        _p('title'), _p('pageid', 'integer'),
        _p('prop', ['ids', 'title', 'sortkey', 'sortkeyprefix', 'type',
                    'timestamp'], multi=True, default='ids|title'),
        _NS, _p('type', ['page', 'subcat', 'file'], multi=True),
        _CONT, _limit(), _p('sort', ['sortkey', 'timestamp']), _DIR,
        _p('start', 'timestamp'), _p('end', 'timestamp')]),
    'search': ('sr', 'list', [
        _p('search'), _p('namespace', 'namespace', multi=True, default=0),
        _limit(), _p('offset', 'integer'), _p('what', ['title', 'text',
                                                       'nearmatch']),
        _p('info', ['rewrittenquery', 'suggestion', 'totalhits'], multi=True),
        _p('prop', ['size', 'wordcount', 'timestamp', 'snippet'], multi=True),
        _p('sort', ['relevance', 'create_timestamp_desc'])]),
    'categories': ('cl', 'prop', [
        _p('prop', ['sortkey', 'timestamp', 'hidden'], multi=True),
        _p('show', ['hidden', '!hidden'], multi=True), _limit(), _CONT,
        _p('categories', 'title', multi=True), _DIR]),
    'imageinfo': ('ii', 'prop', [
        _p('prop', ['timestamp', 'user', 'userid', 'comment',
                    'parsedcomment', 'canonicaltitle', 'url', 'size',
                    'dimensions', 'sha1', 'mime', 'thumbmime', 'mediatype',
                    'metadata', 'commonmetadata', 'extmetadata',
                    'archivename', 'bitdepth', 'uploadwarning', 'badfile'],
           multi=True, default='timestamp|user'),
        _p('limit', 'limit', default=1, max=500, highmax=5000, min=1),
        _p('start', 'timestamp'), _p('end', 'timestamp'),
        _p('urlwidth', 'integer', default=-1), _p('urlheight', 'integer',
                                                  default=-1),
        _p('metadataversion'), _p('extmetadatalanguage'),
        _p('urlparam'), _p('badfilecontexttitle'), _CONT,
        _p('localonly', 'boolean')]),
    'info': ('in', 'prop', [
        _p('prop', ['protection', 'talkid', 'watched', 'watchers',
                    'visitingwatchers', 'notificationtimestamp', 'subjectid',
                    'associatedpage', 'url', 'preload', 'displaytitle',
                    'varianttitles', 'linkclasses'], multi=True),
        _p('testactions', multi=True), _CONT]),
    'revisions': ('rv', 'prop', [
        _p('prop', ['comment', 'content', 'contentmodel', 'flagged', 'ids',
                    'parsedcomment', 'roles', 'sha1', 'size', 'slotsha1',
                    'slotsize', 'tags', 'timestamp', 'user', 'userid'],
           multi=True, default='ids|timestamp|flags|comment|user'),
        _p('slots', ['*', 'main', 'mediainfo'], multi=True),
        _limit(), _p('startid', 'integer'), _p('endid', 'integer'),
        _p('start', 'timestamp'), _p('end', 'timestamp'), _TS_DIR,
        _p('user', 'user'), _p('excludeuser', 'user'), _p('tag'), _CONT]),
    'pageprops': ('pp', 'prop', [_CONT, _p('prop', multi=True)]),
    'templates': ('tl', 'prop', [_NS, _limit(), _CONT,
                                 _p('templates', 'title', multi=True), _DIR]),
    'siteinfo': ('si', 'meta', [
        _p('prop', ['general', 'namespaces', 'namespacealiases',
                    'specialpagealiases', 'magicwords', 'interwikimap',
                    'dbrepllag', 'statistics', 'usergroups', 'libraries',
                    'extensions', 'fileextensions', 'rightsinfo',
                    'restrictions', 'languages', 'skins', 'extensiontags',
                    'functionhooks', 'showhooks', 'variables', 'protocols',
                    'defaultoptions', 'uploaddialog'], multi=True,
           default='general')]),
    'userinfo': ('ui', 'meta', [
        _p('prop', ['blockinfo', 'hasmsg', 'groups', 'groupmemberships',
                    'implicitgroups', 'rights', 'changeablegroups', 'options',
                    'editcount', 'ratelimits', 'theoreticalratelimits',
                    'email', 'realname', 'acceptlang', 'registration',
                    'unreadcount', 'centralids', 'latestcontrib',
                    'cancreateaccount'], multi=True)]),
    'tokens': ('', 'meta', [
        _p('type', ['createaccount', 'csrf', 'login', 'patrol', 'rollback',
                    'userrights', 'watch'], multi=True, default='csrf')]),
    'wikibase': ('wb', 'meta', [_p('prop', ['url', 'siteid'], multi=True)]),
    'filerepoinfo': ('fri', 'meta', [_p('prop', multi=True)]),
}
GENERATORS = ['allimages', 'allpages', 'categorymembers', 'search',
              'categories', 'revisions', 'templates', 'imageinfo']

ACTION_MODULES: dict[str, tuple[str, list[Spec], bool]] = {
    'login': ('lg', [_p('name'), _p('password', 'password'), _p('domain'),
                     _p('token')], True),
    'logout': ('', [_p('token')], True),
    'wbgetentities': ('', [_p('ids', multi=True), _p('sites', multi=True),
                           _p('titles', multi=True), _p('redirects'),
                           _p('props', multi=True), _p('languages', multi=True),
                           _p('languagefallback', 'boolean'),
                           _p('normalize', 'boolean'),
                           _p('sitefilter', multi=True)], False),
    'wbsetclaim': ('', [_p('claim', 'text'), _p('index', 'integer'),
                        _p('summary'), _p('tags', multi=True),
                        _p('token'), _p('baserevid', 'integer'),
                        _p('bot', 'boolean')], True),
    'wbcreateclaim': ('', [_p('entity'), _p('snaktype', ['value', 'novalue',
                                                         'somevalue']),
                           _p('property'), _p('value', 'text'),
                           _p('summary'), _p('tags', multi=True),
                           _p('token'), _p('baserevid', 'integer'),
                           _p('bot', 'boolean')], True),
    'wbeditentity': ('', [_p('id'), _p('new'), _p('site'), _p('title'),
                          _p('baserevid', 'integer'), _p('summary'),
                          _p('tags', multi=True), _p('token'),
                          _p('bot', 'boolean'), _p('data', 'text'),
                          _p('clear', 'boolean')], True),
    'wbremoveclaims': ('', [_p('claim', multi=True), _p('summary'),
                            _p('tags', multi=True), _p('token'),
                            _p('baserevid', 'integer'),
                            _p('bot', 'boolean')], True),
    'edit': ('', [_p('title'), _p('pageid', 'integer'), _p('text', 'text'),
                  _p('summary'), _p('token'), _p('baserevid', 'integer'),
                  _p('bot', 'boolean'), _p('nocreate', 'boolean'),
                  _p('tags', multi=True), _p('appendtext', 'text')], True),
    'purge': ('', [_p('titles', multi=True), _p('forcelinkupdate',
                                                'boolean')], True),
    'paraminfo': ('', [_p('modules', multi=True), _p('helpformat',
                                                     ['html', 'none', 'raw',
                                                      'wikitext'])], False),
}


def _param(index: int, spec: Spec, fv: int) -> dict[str, Any]:
    name, ptype, kw = spec
    out: dict[str, Any] = {'index': index, 'name': name, 'type': ptype}
    flag = True if fv == 2 else ''
    for key, value in kw.items():
        if key == 'multi':
            out['multi'] = flag
            out.update(limit=50, lowlimit=50, highlimit=500)
        else:
            out[key] = value
    if 'default' not in out and ptype == 'boolean':
        out['default'] = False
    return out


def _module(name: str, path: str, group: str, prefix: str,
            params: list[Spec], fv: int, mustbeposted: bool = False
            ) -> dict[str, Any]:
    out: dict[str, Any] = {
        'name': name, 'classname': 'Api' + name.title().replace('+', ''),
        'path': path, 'group': group, 'prefix': prefix,
        'source': 'MediaWiki', 'sourcename': 'MediaWiki',
        'licensetag': 'GPL-2.0-or-later',
        'licenselink': '/wiki/Special:Version/License/MediaWiki',
        'parameters': [_param(i, p, fv) for i, p in enumerate(params)],
        'templatedparameters': [],
    }
    if group in ('list', 'prop') and name in GENERATORS:
        out['generator'] = True if fv == 2 else ''
    if mustbeposted:
        out['mustbeposted'] = True if fv == 2 else ''
        out['writerights'] = True if fv == 2 else ''
    return out


def _main(fv: int) -> dict[str, Any]:
    actions = sorted(['query', *ACTION_MODULES])
    return _module('main', 'main', 'action', '', [
        _p('action', actions, submodules={a: a for a in actions},
           default='help'),
        _p('format', ['json', 'jsonfm', 'none', 'php', 'xml'],
           submodules={f: f for f in ('json', 'jsonfm', 'none', 'php',
                                      'xml')}, default='jsonfm'),
        _p('maxlag', 'integer'), _p('smaxage', 'integer', default=0),
        _p('maxage', 'integer', default=0),
        _p('assert', ['anon', 'bot', 'user']), _p('assertuser', 'user'),
        _p('requestid'), _p('servedby', 'boolean'),
        _p('curtimestamp', 'boolean'), _p('responselanginfo', 'boolean'),
        _p('origin'), _p('uselang', default='user'), _p('variant'),
        _p('errorformat', ['bc', 'html', 'none', 'plaintext', 'raw',
                           'wikitext'], default='bc'),
        _p('errorlang', default='uselang'),
        _p('errorsuselocal', 'boolean')], fv)


def _query(fv: int) -> dict[str, Any]:
    def group(kind: str) -> list[str]:
        return sorted(n for n, (_, g, _) in QUERY_MODULES.items() if g == kind)

    params = []
    for kind in ('prop', 'list', 'meta'):
        names = group(kind)
        params.append(_p(kind, names, multi=True,
                         submodules={n: f'query+{n}' for n in names}))
    gens = sorted(GENERATORS)
    params += [
        _p('indexpageids', 'boolean'), _p('export', 'boolean'),
        _p('exportnowrap', 'boolean'), _p('iwurl', 'boolean'), _CONT,
        _p('rawcontinue', 'boolean'), _p('titles', multi=True),
        _p('pageids', 'integer', multi=True), _p('revids', 'integer',
                                                 multi=True),
        _p('generator', gens, submodules={n: f'query+{n}' for n in gens},
           submoduleparamprefix='g'),
        _p('redirects', 'boolean'), _p('converttitles', 'boolean')]
    return _module('query', 'query', 'action', '', params, fv)


def module_info(path: str, fv: int) -> dict[str, Any] | None:
    """Paraminfo of one module path (``main``, ``query``, ``query+x``, …)."""
    if path == 'main':
        return _main(fv)
    if path == 'query':
        return _query(fv)
    if path.startswith('query+') and path[6:] in QUERY_MODULES:
        name = path[6:]
        prefix, group, params = QUERY_MODULES[name]
        return _module(name, path, group, prefix, params, fv)
    if path in ACTION_MODULES:
        prefix, params, posted = ACTION_MODULES[path]
        return _module(path, path, 'action', prefix, params, fv, posted)
    return None


def paraminfo(modules: list[str], fv: int) -> dict[str, Any]:
    """The ``paraminfo`` result for the requested module paths."""
    found = []
    for path in modules:
        if path in QUERY_MODULES and path not in ACTION_MODULES:
            path = 'query+' + path
        info = module_info(path, fv)
        if info is None:
            found.append({'name': path, 'path': path, 'missing': True
                          if fv == 2 else ''})
        else:
            found.append(info)
    return {'paraminfo': {'helpformat': 'none', 'modules': found}}
