"""Point pywikibot at a running :class:`~tests.testwiki.TestWiki`.

Two ways, both offline:

* :func:`write_config` writes ``user-config.py``, ``user-password.py`` and a
  ``testwiki_family.py`` into a directory; run a subprocess with
  ``PYWIKIBOT_DIR`` set to it (the way an operator configures a custom wiki).
* :func:`configure` does the same for the current process; it works whether
  or not pywikibot was imported already (config values are set at runtime).

The test wiki is registered *as* the ``commons`` family (code ``commons``)
and as ``wikidata``: bot code that says ``pywikibot.Site('commons',
'commons')`` runs unchanged against it, and pywikibot internals that hard-code
``Site('commons')`` (commonsMedia values such as P18 are turned into
``FilePage(Site('commons'), …)``) stay on 127.0.0.1 instead of reaching
Wikimedia.  Each family is a ``SingleSiteFamily`` + ``DefaultWikibaseFamily``
(a ``DataSite`` whose entity sources are itself), so MediaInfo and item
reads/writes all go to the one local server.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import TestWiki

FAMILY = 'commons'
FAMILIES = ('commons', 'wikidata')

_FAMILY_SOURCE = '''"""Family for the Wikivel local test wiki (generated)."""
from pywikibot import family


class Family(family.SingleSiteFamily, family.DefaultWikibaseFamily):
    """{sitename} at {server} (a DataSite: MediaInfo + items)."""

    name = {name!r}
    domain = {domain!r}

    def protocol(self, code):
        return 'http'

    def scriptpath(self, code):
        return {scriptpath!r}
'''

# Settings that keep tests fast and offline.
TEST_SETTINGS: dict[str, Any] = {
    'put_throttle': 0, 'minthrottle': 0, 'maxthrottle': 1, 'write_maxlag': 5,
    'max_retries': 3, 'retry_wait': 0, 'retry_max': 1, 'socket_timeout': (3, 10),
    'API_config_expiry': 0, 'max_queue_size': 1, 'verbose_output': False,
    'log': [], 'noisysleep': 3600.0,
}


def family_source(api_url: str, name: str = FAMILY) -> str:
    """Python source of a family file for the wiki at *api_url*."""
    server = api_url.split('/w/api.php')[0]
    # 'wikidata' is served under /wikidata/w so URL matching (data_repository)
    # finds exactly one family for the /w path.
    return _FAMILY_SOURCE.format(name=name, domain=server.split('//', 1)[1],
                                 server=server, sitename='Wikivel test wiki',
                                 scriptpath='/w' if name == FAMILY
                                 else f'/{name}/w')


def write_config(directory: str | Path, wiki: TestWiki | None = None, *,
                 api_url: str | None = None, password: str | None = None,
                 username: str = 'WikivelBot', app: str = 'test',
                 extra: str = '') -> Path:
    """Write user-config.py, user-password.py and the family file; return dir."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    api_url = api_url or (wiki.api_url if wiki else None)
    password = password if password is not None else (
        wiki.bot_password if wiki else '')
    assert api_url, 'need a wiki or an api_url'
    for name in FAMILIES:
        (directory / f'{name}_family.py').write_text(family_source(api_url, name))
    pw_file = directory / 'user-password.py'
    pw_file.write_text(f'({username!r}, BotPassword({app!r}, {password!r}))\n')
    pw_file.chmod(0o600)
    settings = '\n'.join(f'{k} = {v!r}' for k, v in TEST_SETTINGS.items())
    families = ''.join(
        f"family_files[{name!r}] = {str(directory / (name + '_family.py'))!r}\n"
        for name in FAMILIES)
    (directory / 'user-config.py').write_text(
        f"{families}family = {FAMILY!r}\nmylang = {FAMILY!r}\n"
        + ''.join(f"usernames[{n!r}][{n!r}] = {username!r}\n" for n in FAMILIES)
        + f"password_file = {str(pw_file)!r}\n{settings}\n{extra}\n")
    return directory


def configure(wiki: TestWiki, directory: str | Path, *, username: str = 'WikivelBot'
              ) -> Any:
    """Configure pywikibot in this process for *wiki*; return the site.

    Sets ``PYWIKIBOT_DIR`` (if pywikibot is not imported yet) so caches,
    cookies and throttle files land in *directory*, never in the checkout.
    """
    directory = Path(write_config(directory, wiki, username=username))
    if 'pywikibot' not in sys.modules:
        os.environ['PYWIKIBOT_DIR'] = str(directory)
        os.environ.setdefault('PYWIKIBOT_NO_USER_CONFIG', '2')
    import pywikibot
    from pywikibot import config

    for key, value in TEST_SETTINGS.items():
        setattr(config, key, value)
    # pywikibot imports a family file by module name after *appending* its folder to
    # sys.path, so a folder earlier on the path that holds another commons_family.py (a
    # previous test wiki's, or pywikibot's own families/) would win: put ours first.
    for entry in _PATH_ENTRIES:
        while entry in sys.path:
            sys.path.remove(entry)
    _PATH_ENTRIES[:] = [str(directory)]
    sys.path.insert(0, str(directory))
    for name in FAMILIES:
        _ORIGINAL.setdefault(name, config.family_files.get(name))
        _forget(name)
        config.family_files[name] = str(directory / f'{name}_family.py')
        config.usernames[name][name] = username
    config.password_file = str(directory / 'user-password.py')
    config.family = FAMILY
    config.mylang = FAMILY
    return pywikibot.Site(FAMILY, FAMILY, user=username)


_ORIGINAL: dict[str, str | None] = {}
_PATH_ENTRIES: list[str] = []


def _forget(name: str) -> None:
    """Drop pywikibot's cached family class, module and sites for *name*."""
    import pywikibot
    from pywikibot.family import Family

    Family._families.pop(name, None)
    sys.modules.pop(f'{name}_family', None)
    for key in [k for k in pywikibot._sites if f':{name}:' in k]:
        del pywikibot._sites[key]


def unconfigure() -> None:
    """Give ``commons``/``wikidata`` back to pywikibot's own family files."""
    from pywikibot import config

    for entry in _PATH_ENTRIES:
        while entry in sys.path:
            sys.path.remove(entry)
    _PATH_ENTRIES.clear()
    for name, original in _ORIGINAL.items():
        _forget(name)
        if original is None:
            config.family_files.pop(name, None)
        else:
            config.family_files[name] = original
    _ORIGINAL.clear()
