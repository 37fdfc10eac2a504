"""Static site description of the test wiki: siteinfo, namespaces, title rules.

The values are modelled on what Wikimedia Commons answers to
``action=query&meta=siteinfo`` (MediaWiki 1.43, formatversion=2), shortened to
what pywikibot and the bot read.  The same server also plays the Wikidata
repository, so namespace 0 carries the ``wikibase-item`` content model and
namespace 120 is ``Property`` (pywikibot finds entity namespaces through
``defaultcontentmodel``).
"""
from __future__ import annotations

from typing import Any

GENERATOR = 'MediaWiki 1.43.0'
SITENAME = 'Wikivel Test Commons'
WIKIID = 'commonswiki'
# Items carry real Wikidata QIDs, so concept URIs use the real Wikidata base;
# nothing ever fetches this URI, it is only an identifier prefix.
CONCEPT_BASE_URI = 'http://www.wikidata.org/entity/'

# (id, name, canonical, subpages, content, defaultcontentmodel)
_NS: list[tuple[int, str, str, bool, bool, str | None]] = [
    (-2, 'Media', 'Media', False, False, None),
    (-1, 'Special', 'Special', False, False, None),
    (0, '', '', False, True, 'wikibase-item'),
    (1, 'Talk', 'Talk', True, False, None),
    (2, 'User', 'User', True, False, None),
    (3, 'User talk', 'User talk', True, False, None),
    (4, 'Commons', 'Project', True, False, None),
    (5, 'Commons talk', 'Project talk', True, False, None),
    (6, 'File', 'File', False, True, None),
    (7, 'File talk', 'File talk', True, False, None),
    (8, 'MediaWiki', 'MediaWiki', False, False, None),
    (9, 'MediaWiki talk', 'MediaWiki talk', True, False, None),
    (10, 'Template', 'Template', True, False, None),
    (11, 'Template talk', 'Template talk', True, False, None),
    (12, 'Help', 'Help', True, False, None),
    (13, 'Help talk', 'Help talk', True, False, None),
    (14, 'Category', 'Category', True, True, None),
    (15, 'Category talk', 'Category talk', True, False, None),
    (100, 'Creator', 'Creator', True, False, None),
    (101, 'Creator talk', 'Creator talk', True, False, None),
    (102, 'TimedText', 'TimedText', False, False, None),
    (103, 'TimedText talk', 'TimedText talk', False, False, None),
    (106, 'Institution', 'Institution', True, False, None),
    (107, 'Institution talk', 'Institution talk', True, False, None),
    (120, 'Property', 'Property', False, False, 'wikibase-property'),
    (121, 'Property talk', 'Property talk', True, False, None),
    (828, 'Module', 'Module', True, False, None),
    (829, 'Module talk', 'Module talk', True, False, None),
]

NAMESPACE_ALIASES: list[tuple[int, str]] = [
    (4, 'COM'), (6, 'Image'), (7, 'Image talk'), (120, 'P'),
]

NS_NAMES: dict[int, str] = {ns: name for ns, name, *_ in _NS}


def namespaces() -> dict[str, dict[str, Any]]:
    """Return siteinfo ``namespaces`` in formatversion 2 shape."""
    out: dict[str, dict[str, Any]] = {}
    for ns, name, canonical, subpages, content, model in _NS:
        entry: dict[str, Any] = {'id': ns, 'case': 'first-letter',
                                 'name': name, 'subpages': subpages}
        if ns != 0:
            entry['canonical'] = canonical
        entry['content'] = content
        entry['nonincludable'] = False
        if model:
            entry['defaultcontentmodel'] = model
        out[str(ns)] = entry
    return out


def namespace_aliases() -> list[dict[str, Any]]:
    """Return siteinfo ``namespacealiases`` (formatversion 2)."""
    return [{'id': ns, 'alias': alias} for ns, alias in NAMESPACE_ALIASES
            if alias != NS_NAMES.get(ns)]


_EXTENSIONS = [
    ('WikibaseClient', 'wikibase'), ('WikibaseRepository', 'wikibase'),
    ('WikibaseMediaInfo', 'wikibase'), ('WikibaseLib', 'wikibase'),
    ('CirrusSearch', 'other'), ('Elastica', 'other'),
    ('CentralAuth', 'specialpage'), ('UploadWizard', 'specialpage'),
    ('TimedMediaHandler', 'media'), ('PdfHandler', 'media'),
    ('PagedTiffHandler', 'media'), ('Scribunto', 'parserhook'),
    ('ParserFunctions', 'parserhook'), ('AbuseFilter', 'antispam'),
]

_MAGICWORDS: list[tuple[str, list[str], bool]] = [
    ('redirect', ['#REDIRECT'], False),
    ('notoc', ['__NOTOC__'], False),
    ('hiddencat', ['__HIDDENCAT__'], False),
    ('toc', ['__TOC__'], False),
    ('pagename', ['PAGENAME'], True),
    ('pagenamee', ['PAGENAMEE'], True),
    ('namespace', ['NAMESPACE'], True),
    ('img_thumbnail', ['thumb', 'thumbnail'], True),
    ('img_manualthumb', ['thumbnail=$1', 'thumb=$1'], True),
    ('img_right', ['right'], True),
    ('img_left', ['left'], True),
    ('img_none', ['none'], True),
    ('img_width', ['$1px'], True),
    ('img_center', ['center', 'centre'], True),
    ('img_framed', ['framed', 'enframed', 'frame'], True),
    ('img_frameless', ['frameless'], True),
    ('img_upright', ['upright', 'upright=$1', 'upright $1'], True),
    ('img_border', ['border'], True),
    ('img_link', ['link=$1'], True),
    ('img_alt', ['alt=$1'], True),
    ('defaultsort', ['DEFAULTSORT:', 'DEFAULTSORTKEY:',
                     'DEFAULTCATEGORYSORT:'], True),
]

_INTERWIKI = [
    ('wikipedia', 'https://en.wikipedia.org/wiki/$1'),
    ('w', 'https://en.wikipedia.org/wiki/$1'),
    ('d', 'https://www.wikidata.org/wiki/$1'),
    ('wikidata', 'https://www.wikidata.org/wiki/$1'),
    ('mw', 'https://www.mediawiki.org/wiki/$1'),
    ('meta', 'https://meta.wikimedia.org/wiki/$1'),
    ('en', 'https://en.wikipedia.org/wiki/$1'),
    ('de', 'https://de.wikipedia.org/wiki/$1'),
    ('fr', 'https://fr.wikipedia.org/wiki/$1'),
]


def general(server: str, now: str) -> dict[str, Any]:
    """Return siteinfo ``general`` (formatversion 2) for *server* at *now*."""
    return {
        'mainpage': 'Main Page',
        'base': f'{server}/wiki/Main_Page',
        'sitename': SITENAME,
        'mainpageisdomainroot': False,
        'logo': f'{server}/static/images/project-logos/commonswiki.png',
        'generator': GENERATOR,
        'phpversion': '8.1.31',
        'phpsapi': 'fpm-fcgi',
        'dbtype': 'mysql',
        'dbversion': '10.6.20-MariaDB-log',
        'imagewhitelistenabled': False,
        'langconversion': True,
        'linkconversion': True,
        'titleconversion': True,
        'linkprefixcharset': '',
        'linkprefix': '',
        'linktrail': '/^([a-z]+)(.*)$/sD',
        'legaltitlechars': " %!\"$&'()*,\\-.\\/0-9:;=?@A-Z\\\\^_`a-z~\\x80-\\xFF+",
        'invalidusernamechars': '@:>=',
        'fixarabicunicode': True,
        'fixmalayalamunicode': True,
        'case': 'first-letter',
        'lang': 'en',
        'fallback': [],
        'rtl': False,
        'fallback8bitEncoding': 'windows-1252',
        'readonly': False,
        'writeapi': True,
        'maxarticlesize': 2097152,
        'timezone': 'UTC',
        'timeoffset': 0,
        'articlepath': '/wiki/$1',
        'scriptpath': '/w',
        'script': '/w/index.php',
        'variantarticlepath': False,
        'server': server,
        'servername': server.split('//', 1)[-1].split(':')[0],
        'wikiid': WIKIID,
        'time': now,
        'misermode': True,
        'uploadsenabled': True,
        'maxuploadsize': 5368709120,
        'minuploadchunksize': 1024,
        'galleryoptions': {'imagesPerRow': 0, 'imageWidth': 120,
                           'imageHeight': 120, 'captionLength': True,
                           'showBytes': True, 'showDimensions': True,
                           'mode': 'traditional'},
        'thumblimits': {str(i): w for i, w in enumerate(
            [120, 150, 180, 200, 220, 250, 300, 400])},
        'imagelimits': {str(i): {'width': w, 'height': h} for i, (w, h) in
                        enumerate([(320, 240), (640, 480), (800, 600),
                                   (1024, 768), (1280, 1024), (2560, 2048)])},
        'favicon': f'{server}/static/favicon/commons.ico',
        'centralidlookupprovider': 'CentralAuth',
        'allcentralidlookupproviders': ['local', 'CentralAuth'],
        'interwikimagic': True,
        'magiclinks': {'ISBN': False, 'PMID': False, 'RFC': False},
        'categorycollation': 'uppercase',
        'nofollowlinks': True,
        'nofollownsexceptions': [],
        'nofollowdomainexceptions': ['wikipedia.org'],
        'externallinktarget': False,
        'wikibase-conceptbaseuri': CONCEPT_BASE_URI,
        'wikibase-geoshapestoragebaseurl': 'https://maps.wikimedia.org/',
        'wikibase-tabulardatastoragebaseurl': 'https://commons.wikimedia.org/wiki/',
        'wikibase-sparql': 'https://query.wikidata.org/sparql',
    }


def siteinfo_prop(prop: str, server: str, now: str) -> Any:
    """Return the formatversion 2 value of one ``siprop``; KeyError if unknown."""
    if prop == 'general':
        return general(server, now)
    if prop == 'namespaces':
        return namespaces()
    if prop == 'namespacealiases':
        return namespace_aliases()
    if prop == 'extensions':
        return [{'type': kind, 'name': name, 'descriptionmsg': name.lower()
                 + '-desc', 'author': 'various', 'license-name':
                 'GPL-2.0-or-later'} for name, kind in _EXTENSIONS]
    if prop == 'magicwords':
        return [{'name': name, 'aliases': aliases, 'case-sensitive': cs}
                for name, aliases, cs in _MAGICWORDS]
    if prop == 'interwikimap':
        return [{'prefix': p, 'url': url, 'local': p not in ('en', 'de', 'fr'),
                 **({'language': p} if p in ('en', 'de', 'fr') else {})}
                for p, url in _INTERWIKI]
    if prop == 'restrictions':
        return {'types': ['create', 'edit', 'move', 'upload'],
                'levels': ['', 'autoconfirmed', 'editautoreviewprotected',
                           'sysop'],
                'cascadinglevels': ['sysop'],
                'semiprotectedlevels': ['autoconfirmed'], }
    if prop == 'fileextensions':
        return [{'ext': e} for e in ('png', 'gif', 'jpg', 'jpeg', 'webp',
                                     'tif', 'tiff', 'svg', 'pdf', 'webm',
                                     'ogv', 'ogg', 'oga', 'flac', 'wav',
                                     'mp3', 'djvu', 'stl')]
    if prop == 'statistics':
        return {'pages': 0, 'articles': 0, 'edits': 0, 'images': 0,
                'users': 3, 'activeusers': 2, 'admins': 1, 'jobs': 0}
    if prop == 'usergroups':
        return [{'name': g, 'rights': r} for g, r in USER_GROUP_RIGHTS.items()]
    if prop == 'languages':
        return [{'code': c, 'bcp47': c, 'name': n} for c, n in
                (('en', 'English'), ('de', 'Deutsch'), ('fr', 'français'),
                 ('es', 'español'), ('it', 'italiano'), ('nl', 'Nederlands'))]
    if prop == 'skins':
        return [{'code': 'vector-2022', 'name': 'Vector 2022', 'default': True}]
    if prop == 'specialpagealiases':
        return [{'realname': 'Upload', 'aliases': ['Upload']},
                {'realname': 'Search', 'aliases': ['Search']}]
    if prop == 'dbrepllag':
        return [{'host': 'db1163', 'lag': 0}]
    if prop == 'rightsinfo':
        return {'url': 'https://creativecommons.org/licenses/by-sa/4.0/',
                'text': 'Creative Commons Attribution-Share Alike 4.0'}
    raise KeyError(prop)


# Rights pywikibot inspects (has_right) for the groups our users are in.
USER_GROUP_RIGHTS: dict[str, list[str]] = {
    '*': ['read', 'createaccount', 'edit', 'createpage', 'writeapi'],
    'user': ['read', 'edit', 'createpage', 'move', 'upload', 'reupload',
             'writeapi', 'purge', 'applychangetags', 'changetags',
             'editcontentmodel', 'minoredit', 'sendemail'],
    'autoconfirmed': ['autoconfirmed', 'editsemiprotected', 'skipcaptcha'],
    'bot': ['bot', 'autoconfirmed', 'editsemiprotected', 'nominornewtalk',
            'autopatrol', 'suppressredirect', 'apihighlimits', 'writeapi',
            'skipcaptcha', 'noratelimit'],
    'sysop': ['block', 'delete', 'undelete', 'protect', 'editprotected',
              'rollback', 'apihighlimits', 'noratelimit'],
}
